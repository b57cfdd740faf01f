"""The inputs of the plan corpus's command-line programs: for each kind of
file, six that take different paths through a tool (clean, messy, broken,
empty, large, unusual).  The first of each kind is the one a plan is made
from; the other five are the runs that must answer as without the plan."""

import os

PY = [
    # The planning input: ordinary, mostly clean code.
    'import os\n\n\ndef size(path):\n    """Bytes in PATH."""\n    return os.stat(path).st_size\n',
    # Messy formatting, unused import, long line, shadowed name.
    'import sys,json\nimport os\ndef f( a,b ):\n  x=1;y=2\n  l = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]\n'
    '  return a+b\nclass  C :\n  def m(self): return list\n',
    # A syntax error.
    'def broken(:\n    return 1\n',
    # An empty file.
    '',
    # Types that do not check, f-strings, async code, decorators, a dataclass.
    'import asyncio\nfrom dataclasses import dataclass\nfrom typing import List\n\n\n@dataclass\nclass P:\n'
    '    x: int\n    y: int = 0\n\n\ndef total(ps: List[P]) -> str:\n    return sum(p.x for p in ps)\n\n\n'
    'async def main() -> None:\n    await asyncio.sleep(0)\n    print(f"{total([P(1)])!r:>10}")\n',
    # Larger: many functions, a class hierarchy, comprehensions, a lambda, tabs.
    "".join('def fn_%d(a, b=%d, *args, **kw):\n    """Doc %d."""\n    return [i * a for i in range(b) if i %% 2]\n\n\n'
            % (i, i, i) for i in range(40)) + 'class A(object):\n\tpass\n\n\nclass B(A):\n    f = lambda self: 1\n',
]

RST = [
    'Title\n=====\n\nSome *emphasis* and ``code``.\n\n- one\n- two\n',
    'Doc\n===\n\n.. note:: A note.\n\n.. code-block:: python\n\n   print(1)\n\nA table:\n\n=====  =====\nA      B\n=====  =====\n1      2\n=====  =====\n',
    'Broken\n====\n\n`unterminated\n\n.. unknown-directive:: x\n',
    '',
    'Sections\n========\n\nSub\n---\n\nA link_ and a footnote [#]_.\n\n.. _link: https://example.invalid/\n\n.. [#] The note.\n',
    "".join('Part %d\n%s\n\nParagraph %d with **bold** text.\n\n' % (i, '-' * (5 + len(str(i))), i) for i in range(60)),
]

MD = [
    '# Title\n\nSome *emphasis* and `code`.\n\n- one\n- two\n',
    '## Table\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quote\n\n```\ncode\n```\n',
    '<div>raw *html*</div>\n\n[link](http://example.invalid "title")\n',
    '',
    '1. one\n2. two\n   * nested\n\n---\n\n![img](x.png)\n',
    "".join('### Heading %d\n\nText %d with __bold__.\n\n' % (i, i) for i in range(80)),
]

YAML = [
    'name: corpus\nitems:\n  - 1\n  - 2\n',
    'a:   1\nb: [1,2,  3]\nc: yes\n',
    'key: [unclosed\n',
    '',
    '---\nanchors: &a {x: 1}\nref: *a\nmulti: |\n  line\n  line\n...\n',
    "".join('k%d:\n  v: %d\n  list: [%s]\n' % (i, i, ", ".join(str(j) for j in range(i % 7))) for i in range(100)),
]

JSON = [
    '{"name": "corpus", "items": [1, 2]}\n',
    '{"a":1,"b":[1,2,{"c":null}],"d":"\\u00e9"}\n',
    '{"broken": [1, 2}\n',
    '',
    '[1.5e300, -0.0, true, false, null, "\\ud83d\\ude00"]\n',
    "[" + ", ".join('{"i": %d, "s": "%s"}' % (i, "x" * (i % 13)) for i in range(300)) + "]\n",
]

TEXT = [
    'The quick brown fox.\nTeh mispelled wrods here.\n',
    'recieve seperate occured definately\n',
    '\x00\x01binary\xff'.encode("latin-1").decode("latin-1"),
    '',
    'Ünïcödé têxt, accomodate, untill.\n' * 20,
    'a line\n' * 2000,
]

KINDS = {"py": PY, "rst": RST, "md": MD, "yaml": YAML, "json": JSON, "txt": TEXT}


def write(root, kind, i):
    """Writes input I of KIND as ROOT/input.KIND (a fresh copy for every
    run: formatters rewrite it); returns its path."""
    path = os.path.join(root, "input." + kind)
    with open(path, "w", encoding="latin-1" if kind == "txt" else "utf-8") as f:
        f.write(KINDS[kind][i])
    return path
