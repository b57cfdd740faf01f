"""Instructions counted with valgrind's cachegrind, without cache
simulation (counts that load does not move), for the bench's diagnostics
(bench/plan/instructions.py, bench/lambda_instructions.py,
bench/entry_cost.py): argv() runs a command under it with one output file
per process in a directory, total() sums what they counted."""
import glob
import os


def argv(out_dir, cmd):
    """cmd under cachegrind, each process writing out_dir/cg.PID."""
    return ["valgrind", "--tool=cachegrind", "--cache-sim=no",
            "--cachegrind-out-file=" + os.path.join(out_dir, "cg.%p")] + cmd


def total(out_dir):
    """The instructions of every process argv(out_dir, ...) ran."""
    n = 0
    for f in glob.glob(os.path.join(out_dir, "cg.*")):
        with open(f) as fh:
            for line in fh:
                if line.startswith("summary:"):
                    n += int(line.split()[1])
    return n
