// Captures real CPython 3.14 `-X importtime` output for the parser's golden
// fixtures.  No 3.14 interpreter exists on these machines, but CPython 3.14
// compiled to WebAssembly does (the pyodide package): PYTHONPROFILEIMPORTTIME
// in its environment turns the option on, and what the interpreter writes to
// stderr reaches the callback below line by line, start-up included.
//
// Besides each log it writes, in a .depths file, what CPython knew when it
// printed each row, from two sources that do not read the log's text:
//
// - the import nesting level: import.c prints a row with "%*s" in a field of
//   2 * import_level.  A cached row (-X importtime=2) whose name fills its
//   field carries no padding, so the log alone cannot say how deep it is; the
//   level is read here from the interpreter's memory while the row is being
//   printed.  The address of import_level is found by a first run: the one
//   int32 whose value equals every ordinary row's printed depth at the moment
//   that row is printed.  Every capture checks that value again on every
//   ordinary row and stops if one disagrees.
// - the import each row was printed inside of (its parent): a wrapper of
//   importlib._bootstrap._find_and_load, which import.c calls by name for
//   every import it times, writes "open" and "close" marks to fd 2 between
//   the rows, so the stack of imports open when a row is printed is the
//   interpreter's own.  An import whose import_ is builtins.__import__ came
//   through import.c and prints a row as it ends; one through
//   importlib.import_module (_gcd_import) prints none and does not count.  The
//   wrapper is installed by a sitecustomize module, as site's import ends;
//   for the rows printed before it the imports still open are known from the
//   level alone, and are bound to their rows as those rows print.
//   The marks never reach the log.  At every row the stack must be as deep as
//   the level read from memory, or the capture stops.
//
// Usage, from the repository root (node 18 or later, network for npm ci):
//   cd tests/cpython314 && npm ci && node capture.mjs
// It rewrites tests/fixtures/importtime/py3.14*.log and .depths; then
//   make build/tests/test_importtime && IT_UPDATE_GOLDEN=1 build/tests/test_importtime
// rewrites the .tree files (review them with git diff).  The suite reads only
// the committed files and never needs this directory's node_modules.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide, version } from "pyodide";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(here, "../fixtures/importtime");
const ROW = /^import time: +(-?\d+|cached) +\| +(-?\d+|cached) +\| (.*)$/;
const IMPORTS = "import json, asyncio, xml.dom.minidom";

// A small application: short names nested deep, so that cached rows are
// padded (their depth is printed) as well as unpadded, next to the cases the
// tree builder must get right: `from . import`, a package's parent already
// loaded, a failed import, importlib.import_module (no row of its own), a
// circular import, and a cached row followed by a fresh import beside it.
const APP = {
  "app.py": [
    "import sys, os",
    "import p",
    "import p.q.r",
    "from p import s",
    "import importlib",
    "importlib.import_module('p.lazy')",
    "try:",
    "    import p.missing",
    "except ImportError:",
    "    pass",
    "import cyc_a",
    "import json",
    "",
  ],
  "p/__init__.py": ["import os", "from . import q", ""],
  "p/q/__init__.py": ["from .r import f", ""],
  "p/q/r.py": ["import sys, p.q", "", "def f():", "    return 1", ""],
  "p/s.py": ["import collections", "import p.t", ""],
  "p/t.py": ["import os", ""],
  "p/lazy.py": ["import os", "import p.u", ""],
  "p/u.py": [""],
  "cyc_a.py": ["import cyc_b", ""],
  "cyc_b.py": ["import cyc_a", "import p.q", ""],
};

// Two programs whose logs are the same row for row (the numbers apart), with
// a cached row CPython printed one level apart: "collections" imported by the
// application before a module served from memory (no file read, so no "_io"
// rows mark where its import begins), or by that module.  A name wider than
// both fields is printed bare at either level.
const MEMLOADER = [
  "import sys",
  "from importlib.machinery import ModuleSpec",
  "SOURCES = {}",
  "class Loader:",
  "    def create_module(self, spec):",
  "        return None",
  "    def exec_module(self, module):",
  "        exec(SOURCES[module.__name__], module.__dict__)",
  "class Finder:",
  "    def find_spec(self, name, path=None, target=None):",
  "        if name in SOURCES:",
  "            return ModuleSpec(name, Loader())",
  "sys.meta_path.insert(0, Finder())",
  "",
];
const TWIN_A = {
  "mem.py": MEMLOADER,
  "app.py": ["import mem", "mem.SOURCES['y'] = ''", "import collections", "import y", ""],
};
const TWIN_B = {
  "mem.py": MEMLOADER,
  "app.py": ["import mem", "mem.SOURCES['y'] = 'import collections'", "import y", ""],
};

const CAPTURES = [
  {
    name: "py3.14",
    what: `-X importtime (PYTHONPROFILEIMPORTTIME=1) of '${IMPORTS}', the standard library on the file system`,
    level: "1", stdlib: "dir", code: IMPORTS,
  },
  {
    name: "py3.14-importtime2",
    what: `-X importtime=2 of '${IMPORTS}', the standard library on the file system`,
    level: "2", stdlib: "dir", code: IMPORTS,
  },
  {
    name: "py3.14-importtime2-zip",
    what: `-X importtime=2 of '${IMPORTS}', the standard library in a zip (zipimport's own cached rows in every import)`,
    level: "2", stdlib: "zip", code: IMPORTS,
  },
  {
    name: "py3.14-importtime2-app",
    what: "-X importtime=2 of 'import app', a small application written for these cases (tests/cpython314/capture.mjs)",
    level: "2", stdlib: "dir", code: "import app", app: APP,
  },
  {
    name: "py3.14-importtime2-twin-a",
    what: "-X importtime=2 of 'import app': collections imported by app before y, a module served from memory",
    level: "2", stdlib: "dir", code: "import app", app: TWIN_A,
  },
  {
    name: "py3.14-importtime2-twin-b",
    what: "-X importtime=2 of 'import app': collections imported by y, a module served from memory",
    level: "2", stdlib: "dir", code: "import app", app: TWIN_B,
  },
];

// The marks of every import the interpreter times (see the top of this
// file), installed as sitecustomize, which site imports at the end of its own
// import (the interpreter has none of its own).  It imports nothing while it
// runs and writes with os.write, unbuffered, on the descriptor the rows go to.
const HOOK = `
import builtins, os, _frozen_importlib
def _install(bootstrap=_frozen_importlib, write=os.write, timed=builtins.__import__, MARK="\\x1f"):
    find_and_load = bootstrap._find_and_load
    def wrapper(name, import_):
        write(2, (MARK + ("open 1 " if import_ is timed else "open 0 ") + name + "\\n").encode())
        try:
            return find_and_load(name, import_)
        finally:
            write(2, (MARK + "close " + name + "\\n").encode())
    bootstrap._find_and_load = wrapper
_install()
del _install
`;
const MARK = "\x1f";

// The wasm memory of the interpreter being loaded, caught as it is instantiated.
let memory = null;
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = async function (source, imports) {
  const result = await instantiate.call(this, source, imports);
  const instance = result.instance || result;
  for (const v of Object.values(instance.exports))
    if (v instanceof WebAssembly.Memory) memory = v;
  return result;
};

function parseRow(line) {
  const m = ROW.exec(line);
  if (!m) return null;
  const name = m[3].replace(/^ +/, "");
  return { cached: m[1] === "cached", name, spaces: m[3].length - name.length };
}

// Extracts the standard library once, so that captures can import it from a
// directory as an installed CPython does.
async function extractStdlib() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpython314-stdlib-"));
  const py = await loadPyodide({ stdout: () => {}, stderr: () => {} });
  py.mountNodeFS("/out", dir);
  py.runPython("import zipfile; zipfile.ZipFile('/lib/python314.zip').extractall('/out')");
  return dir;
}

// Runs one capture; onRow sees each row as it is printed, with the
// interpreter's memory, and onMark each mark of the hook (when hook is set).
async function run(c, stdlibDir, onRow, onMark = null) {
  const lines = [];
  let capturing = true;
  const env = { PYTHONPROFILEIMPORTTIME: c.level, PYTHONDONTWRITEBYTECODE: "1" };
  const dirs = [];
  if (c.app) dirs.push("/app");
  if (c.stdlib === "dir") dirs.push("/stdlib");
  if (onMark) dirs.push("/truth");
  if (dirs.length) env.PYTHONPATH = dirs.join(":");
  memory = null;
  const py = await loadPyodide({
    env,
    stdout: () => {},
    stderr: (line) => {
      if (!capturing) return;
      if (line.startsWith(MARK)) {
        if (!onMark) throw new Error(`${c.name}: a mark without the hook: ${line}`);
        onMark(line.slice(MARK.length));
        return;
      }
      lines.push(line);
      const row = parseRow(line);
      if (row) onRow(row, new Int32Array(memory.buffer), line);
    },
    fsInit: async (FS) => {
      if (c.stdlib === "dir") {
        FS.mkdirTree("/stdlib");
        FS.mount(FS.filesystems.NODEFS, { root: stdlibDir }, "/stdlib");
      }
      if (onMark) {
        FS.mkdirTree("/truth");
        FS.writeFile("/truth/sitecustomize.py", HOOK);
      }
      for (const [file, text] of Object.entries(c.app || {})) {
        FS.mkdirTree(path.posix.dirname("/app/" + file));
        FS.writeFile("/app/" + file, text.join("\n"));
      }
    },
  });
  py.runPython(c.code);
  capturing = false;
  const where = py.runPython("import json, sys; json.__file__").toString();
  if (c.stdlib === "dir" && !where.startsWith("/stdlib/"))
    throw new Error(`${c.name}: the standard library came from ${where}, not /stdlib`);
  return lines;
}

// The imports open while the rows are printed, and the parent of each row:
// the innermost import import.c is timing (the one import_level counts).
// Entries come from the hook's marks; before the hook, from the level read
// in memory (an entry per level the rows show open, bound to the next
// ordinary row that prints at its depth).  Every row checks the stack's
// depth against the level.
class OpenImports {
  constructor(name) {
    this.name = name;
    // Open imports, innermost last: {name (null: known from the level
    // only), timed (import.c times it: it counts in the level and prints a
    // row), row (its row's index, once printed)}.
    this.open = [];
    this.closed = null; // the timed import whose row prints next
    this.parents = []; // per row: its parent's entry, or null for a root
    this.untimed = []; // per row: the untimed import it was printed inside of, "-" for none
    this.hooked = null; // the number of rows printed before the first mark
  }
  fail(why) {
    throw new Error(`${this.name}: row ${this.parents.length + 1}: ${why}`);
  }
  timed() {
    return this.open.filter((e) => e.timed);
  }
  mark(text) {
    const [what, ...rest] = text.split(" ");
    if (this.hooked === null) this.hooked = this.parents.length;
    if (this.closed) this.fail(`a mark before the row of '${this.closed.name}': ${text}`);
    if (what === "open") {
      this.open.push({ name: rest.slice(1).join(" "), timed: rest[0] === "1", row: null });
      return;
    }
    const name = rest.join(" "), e = this.open.pop();
    if (!e || e.name !== name) this.fail(`close of '${name}' with '${e ? e.name : "nothing"}' open`);
    if (e.timed) this.closed = e;
  }
  row(r, level) {
    const i = this.parents.length;
    if (!r.cached) {
      let e = this.closed;
      const top = this.open.at(-1);
      this.closed = null;
      if (e) {
        if (e.name !== r.name) this.fail(`row of '${r.name}' after the close of '${e.name}'`);
      } else if (top && top.name === null && this.timed().length === level + 1) {
        e = this.open.pop();
      } else if (this.hooked === null) {
        e = { name: null, timed: true, row: null };
      } else {
        this.fail(`row of '${r.name}' without its import's close`);
      }
      e.row = i;
    } else if (this.closed) {
      this.fail(`cached '${r.name}' before the row of '${this.closed.name}'`);
    }
    // Before the hook, the level says how many imports are open.
    while (this.hooked === null && this.timed().length < level)
      this.open.push({ name: null, timed: true, row: null });
    const timed = this.timed();
    if (timed.length !== level)
      this.fail(`'${r.name}' printed at level ${level} with ${timed.length} timed imports open`);
    this.parents.push(level ? timed[level - 1] : null);
    // An import importlib.import_module is running inside the parent (no row, no level of its own).
    const inner = this.open.at(-1);
    this.untimed.push(inner && !inner.timed ? inner.name : "-");
  }
  // Each row's parent as a row number (1-based; 0: a root).
  finish() {
    if (this.closed) this.fail(`no row for '${this.closed.name}'`);
    return this.parents.map((p, i) => {
      if (!p) return 0;
      if (p.row === null || p.row <= i) this.fail(`the parent of row ${i + 1} never printed its row`);
      return p.row + 1;
    });
  }
}

// The address of import_level: the one int32 that equals every ordinary
// row's printed depth while that row is printed.
async function findLevel(stdlibDir) {
  let cands = null;
  await run(CAPTURES[1], stdlibDir, (row, heap) => {
    if (row.cached) return;
    const depth = row.spaces / 2;
    if (cands === null) {
      cands = [];
      for (let i = 0; i < heap.length; i++) if (heap[i] === depth) cands.push(i);
    } else {
      cands = cands.filter((i) => heap[i] === depth);
    }
  });
  if (!cands || cands.length !== 1)
    throw new Error(`cannot find import_level: ${cands ? cands.length : 0} candidates`);
  return cands[0];
}

// What the log alone allows for each row: [lo, hi] for the level.  Between
// two printed rows the level only rises (an import starts silently); an
// ordinary row at depth d is printed as its import ends, at level d + 1
// falling to d; a cached row at level L does not change it.  A padded cached
// row names L (its field is 2 * L wide); an unpadded one allows 0 ..
// len(name) / 2.  So L lies between the level the previous row left and the
// bound of the rows after it.  Written independently of the parser, in
// another language, for the test to hold the parser against.
function bounds(rows) {
  const own = rows.map((r) => {
    if (!r.cached) return [r.spaces / 2, r.spaces / 2];
    const width = r.spaces + r.name.length;
    return r.spaces ? [width >> 1, width >> 1] : [0, r.name.length >> 1];
  });
  const lo = new Array(rows.length), hi = new Array(rows.length);
  let level = 0;
  rows.forEach((r, i) => {
    lo[i] = r.cached ? Math.max(level, own[i][0]) : own[i][0];
    level = lo[i];
  });
  // After the last ordinary row no import starts that does not end (it would
  // have printed a row), so the level stays where that row left it.
  let next = null;
  for (let i = rows.length - 1; i >= 0; i--) {
    if (!rows[i].cached) {
      hi[i] = own[i][1];
      next = own[i][1] + 1;
    } else {
      hi[i] = next === null ? lo[i] : Math.min(next, own[i][1]);
      next = hi[i];
    }
  }
  return rows.map((r, i) => [lo[i], Math.max(lo[i], hi[i])]);
}

const stdlibDir = await extractStdlib();
try {
  const addr = await findLevel(stdlibDir);
  for (const c of CAPTURES) {
    const rows = [], truth = new OpenImports(c.name);
    const lines = await run(c, stdlibDir, (row, heap, line) => {
      const level = heap[addr];
      if (!row.cached && level !== row.spaces / 2)
        throw new Error(`${c.name}: import_level ${level} at '${line}'`);
      truth.row(row, level);
      rows.push({ ...row, level });
    }, (text) => truth.mark(text));
    const parents = truth.finish();
    const b = bounds(rows);
    const outside = rows.filter((r, i) => r.level < b[i][0] || r.level > b[i][1]);
    if (outside.length)
      throw new Error(`${c.name}: ${outside.length} rows outside the bounds the log allows`);
    // The parent is the next row printed one level up (import.c's rows are post-order).
    rows.forEach((r, i) => {
      let j = i + 1;
      while (j < rows.length && (rows[j].cached || rows[j].level >= r.level)) j++;
      const want = r.level === 0 ? 0 : j + 1;
      if (parents[i] !== want)
        throw new Error(`${c.name}: row ${i + 1} '${r.name}': parent row ${parents[i]} by the hook, ${want} by the levels`);
    });
    fs.writeFileSync(path.join(outDir, c.name + ".log"), lines.join("\n") + "\n");
    const exact = rows.filter((r, i) => r.cached && b[i][0] === b[i][1]).length;
    const cached = rows.filter((r) => r.cached).length;
    fs.writeFileSync(
      path.join(outDir, c.name + ".depths"),
      [
        `# ${c.name}.log: ${c.what}; CPython 3.14 as pyodide ${version} builds it.`,
        "# Written by tests/cpython314/capture.mjs.  One line per importtime row, in log order:",
        "# the depth CPython printed the row at (its import_level), the lowest and highest depth",
        "# the log itself allows, the row number of the import it was printed inside of (0: none),",
        "# the row's kind and name, and the module importlib.import_module was loading inside that",
        "# import when the row was printed (no row, no level of its own; '-': none).  The parents of",
        `# the rows from row ${truth.hooked + 1} on are the hook's (the imports the interpreter had open),`,
        "# those before it the levels' (the next row printed one level up; no import_module then).",
        ...rows.map((r, i) =>
          `${r.level} ${b[i][0]} ${b[i][1]} ${parents[i]} ${r.cached ? "cached" : "row"} ${r.name} ` +
          truth.untimed[i]),
        "",
      ].join("\n"),
    );
    console.log(`${c.name}.log: ${lines.length} lines, ${rows.length} rows, ${cached} cached ` +
      `(${exact} of them placed by the log alone), parents from the hook from row ${truth.hooked + 1}`);
  }
} finally {
  fs.rmSync(stdlibDir, { recursive: true, force: true });
}
