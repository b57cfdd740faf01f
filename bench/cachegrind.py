"""Instructions counted with valgrind's cachegrind, without cache
simulation (counts that load does not move), for the bench's diagnostics
(bench/plan/instructions.py, bench/lambda_instructions.py,
bench/entry_cost.py): argv() runs a command under it with one output file
per process in a directory, total() sums what they counted.  With
first=True the count stops at the process's first send(), sendto() or
sendmsg() call: for an Fn function (coldstart-fdk, fdk-python), whose first
send is its first response, the instructions to the first response alone,
without what the process does after it (the collection released at the
answer, the exit); callgrind's --dump-before writes what was counted up to
there."""
import glob
import os


def argv(out_dir, cmd, first=False):
    """cmd under cachegrind (callgrind with first), each process writing
    out_dir/cg.PID (and cg.PID.1, up to its first send, with first)."""
    if first:
        return ["valgrind", "--tool=callgrind", "--dump-before=send*",
                "--callgrind-out-file=" + os.path.join(out_dir, "cg.%p")] + \
            cmd
    return ["valgrind", "--tool=cachegrind", "--cache-sim=no",
            "--cachegrind-out-file=" + os.path.join(out_dir, "cg.%p")] + cmd


def _count(path):
    with open(path) as fh:
        for line in fh:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


def total(out_dir, first=False):
    """The instructions of every process argv(out_dir, ..., first) ran: with
    first, of each process up to its first send (all of it when it sent
    nothing)."""
    n = 0
    for f in glob.glob(os.path.join(out_dir, "cg.*")):
        if os.path.basename(f).count(".") > 1:
            continue  # a dump: counted with its process below
        n += _count(f + ".1" if first and os.path.exists(f + ".1") else f)
    return n
