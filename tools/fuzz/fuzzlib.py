"""What the fuzzers of tools/fuzz share: running tilec under a timeout (in the fork
server, tilec-fork-server, when built: no process start-up per run), judging a run,
reading the exports of a file, and the summary a run prints.

The verdicts of a compile come from tests/fuzz/robustness.py (`judge`): exit 0 or 1,
a located error with every exit 1, no internal compiler error or sanitizer report.
"""

import argparse
import atexit
import collections
import concurrent.futures
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "fuzz"))
import robustness  # noqa: E402  (judge, describe_exit, tokenize, mutate)

DEFAULT_TILEC = os.path.join(REPO, "build", "compiler", "driver", "tilec")

FUNC_RE = re.compile(r"^func (\w+) = ", re.M)
PARAMS_RE = re.compile(r"^\s*params\((.*)\)\s*$", re.M)


# The fork server (fork_server.cpp, built beside tilec as tilec-fork-server): when set by
# use_fork_server, run() sends tilec's command lines to it, one server per worker thread.
_fork = {"server": None, "tilec": None, "dir": None, "all": [], "lock": threading.Lock()}
_local = threading.local()


def use_fork_server(tilec, server):
    """Runs tilec command lines (those whose argv[0] is `tilec`) through `server` from now on."""
    _fork.update(server=server, tilec=tilec, dir=tempfile.mkdtemp(prefix="tilec-fork-"))
    atexit.register(_stop_fork_servers)


def _stop_fork_servers():
    for proc in _fork["all"]:
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
    shutil.rmtree(_fork["dir"], ignore_errors=True)


def _server():
    proc = getattr(_local, "server", None)
    if proc is None or proc.poll() is not None:
        proc = subprocess.Popen([_fork["server"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                start_new_session=True)
        with _fork["lock"]:
            _fork["all"].append(proc)
        _local.server = proc
        _local.out = os.path.join(_fork["dir"], f"out-{threading.get_ident()}")
    return proc


# Seconds spent in run(), per label given by the callers, for the summary.
SECONDS = collections.Counter()


def run(cmd, timeout, cwd=None, label=None):
    """(exit code, negative signal number, or None on timeout; combined output; seconds).
    A run that times out is killed with its whole process group (one this call started,
    nothing else). With the fork server, the same command runs in a child of the server
    (tilec_main, as tilec's main() runs it) instead of a new tilec process. The seconds
    are added to SECONDS[label]."""
    code, out, seconds = _run(cmd, timeout, cwd)
    with _fork["lock"]:
        SECONDS[label or "other"] += seconds
    return code, out, seconds


def _run(cmd, timeout, cwd):
    start = time.monotonic()
    if _fork["server"] and cwd is None and cmd[0] == _fork["tilec"] and not any("\n" in c for c in cmd):
        proc = _server()
        path = _local.out
        request = f"{max(1, int(timeout * 1000))} {len(path)} {len(cmd)}\n{path}\n" + "".join(c + "\n" for c in cmd)
        try:
            proc.stdin.write(request.encode("utf-8", errors="surrogateescape"))
            proc.stdin.flush()
            reply = proc.stdout.readline().decode().split()
        except OSError:
            reply = []
        if reply and reply[0] in ("exit", "signal", "timeout"):
            code = None if reply[0] == "timeout" else int(reply[1]) if reply[0] == "exit" else -int(reply[1])
            with open(path, "rb") as f:
                out = f.read()
            return code, out.decode("utf-8", errors="replace"), time.monotonic() - start
        # The server itself failed (not tilec): say so, and run this command as a process.
        print(f"fuzzlib: the fork server failed ({' '.join(reply) or 'no reply'}); running the command directly",
              file=sys.stderr, flush=True)
        proc.kill()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=cwd, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    return code, out.decode("utf-8", errors="replace"), time.monotonic() - start


def judge_compile(code, output):
    """Why a compile failed the robustness rules, or None."""
    return robustness.judge(code, output)


def judge_run(code, output):
    """Why a `tilec run` failed: a crash, a hang, an internal error; None when it gave a
    verdict (PASS, FAIL or a user error). Whether a FAIL is a mismatch is the caller's."""
    for marker in robustness.CRASH_MARKERS:
        if marker in output:
            return f"output contains {marker!r}"
    if code is None or code < 0 or code not in (0, 1):
        return robustness.describe_exit(code)
    return None


def exports(tir):
    """[(symbol, sizes, scalars)] of `tilec FILE --emit=tir` output: each function's C
    symbol, its size names and its scalar parameters with their types."""
    found = []
    funcs = list(FUNC_RE.finditer(tir))
    for k, f in enumerate(funcs):
        end = funcs[k + 1].start() if k + 1 < len(funcs) else len(tir)
        p = PARAMS_RE.search(tir, f.end(), end)
        sizes, scalars = [], []
        if p:
            for part in split_params(p.group(1)):
                name, _, rest = part.partition(":")
                rest = rest.strip()
                if rest.startswith("size "):
                    sizes.append(name.strip())
                elif not rest.startswith("global "):
                    scalars.append((name.strip(), rest))
        found.append((f.group(1), sizes, scalars))
    return found


def split_params(text):
    """The comma-separated parameters of a params(...) line (commas inside [] kept)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


KEEP_MARKER = ".fuzz-findings"


def prepare_keep_dir(path):
    """Empties `path` if an earlier fuzzing run made it (it holds the marker), then makes
    it, so that it holds this run's findings only."""
    if os.path.exists(os.path.join(path, KEEP_MARKER)):
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    open(os.path.join(path, KEEP_MARKER), "w").close()


class Tally:
    """The counts a fuzzing run reports, and the first few findings in full."""

    def __init__(self, name, show=5):
        self.name, self.show = name, show
        self.counts = collections.Counter()
        self.findings = []  # (kind, what, command, output)

    def add(self, key, n=1):
        self.counts[key] += n

    def finding(self, kind, what, cmd, output):
        self.counts[kind] += 1
        self.findings.append((kind, what, cmd, output))
        if len(self.findings) <= self.show:
            print(f"\n--- {self.name}: {kind}: {what}\n    run: {shlex.join(cmd)}", flush=True)
            lines = output.rstrip().splitlines()
            for line in lines[:14]:
                print(f"    | {line}")
            if len(lines) > 14:
                print(f"    | ... ({len(lines) - 14} more lines)")

    def summary(self, keys, seconds):
        parts = ", ".join(f"{k} {self.counts[k]}" for k in keys)
        if SECONDS:
            print(f"{self.name}: seconds in tilec by stage: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(SECONDS.items(), key=lambda kv: -kv[1])), flush=True)
        print(f"{self.name}: {parts} ({seconds:.0f} s)", flush=True)


def common_args(doc, count, what):
    """The options both fuzzers take."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", default=DEFAULT_TILEC)
    ap.add_argument("--count", type=int, default=count, help=f"{what} (default %(default)s; with --minutes: no limit)")
    ap.add_argument("--minutes", type=float, default=0, help="run until this much time has passed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per tilec run (then a hang)")
    ap.add_argument("--keep-dir", help=f"where {what} with findings are kept (default: a temporary folder)")
    ap.add_argument("--show", type=int, default=5, help="findings printed in full")
    ap.add_argument("--fork-server", default="auto",
                    help="tilec-fork-server to run tilec's command lines in (no process start-up per run): "
                         "auto (the one beside --tilec, if built), a path, or off (a tilec process per run)")
    return ap


PROGRESS_SECONDS = 300


def drive(name, args, what, check, record, batch=1):
    """Runs check(indices, work) on args.jobs threads for input indices 0, 1, ... (args.count
    of them, or as many as fit in args.minutes), `batch` indices per call, and
    record(result, tally, keep) for each result of each call (check returns a list) in
    order of completion. Returns (tally, keep dir, work dir, seconds)."""
    if not os.access(args.tilec, os.X_OK):
        print(f"{name}: error: no compiler at {args.tilec}", file=sys.stderr)
        return None
    server = args.fork_server
    if server == "auto":
        server = os.path.join(os.path.dirname(os.path.abspath(args.tilec)), "tilec-fork-server")
        server = server if os.access(server, os.X_OK) else "off"
    if server != "off":
        if not os.access(server, os.X_OK):
            print(f"{name}: error: no fork server at {server}", file=sys.stderr)
            return None
        use_fork_server(args.tilec, server)
    work = tempfile.mkdtemp(prefix=f"tilec-{name}-")
    keep = args.keep_dir or os.path.join(work, "kept")
    prepare_keep_dir(keep)
    tally = Tally(name, args.show)
    start = time.monotonic()
    deadline = start + args.minutes * 60 if args.minutes else None
    limit = None if deadline else args.count
    print(f"{name}: seed {args.seed}, {args.jobs} workers, "
          + (f"{args.minutes:g} minutes" if deadline else f"{args.count} {what}")
          + (f", {batch} {what} per batch" if batch > 1 else "")
          + (f", tilec runs in {server}" if server != "off" else ", a tilec process per run"), flush=True)
    next_progress = start + PROGRESS_SECONDS
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        pending, index = set(), 0
        while True:
            while len(pending) < 2 * args.jobs and (limit is None or index < limit) and \
                    (deadline is None or time.monotonic() < deadline):
                n = batch if limit is None else min(batch, limit - index)
                pending.add(pool.submit(check, list(range(index, index + n)), work))
                index += n
            if not pending:
                break
            done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                for result in fut.result():
                    record(result, tally, keep)
                    tally.add("done")
            if time.monotonic() >= next_progress:
                # A long run says how far it got, in case it is stopped before its figures.
                next_progress += PROGRESS_SECONDS
                print(f"{name}: after {(time.monotonic() - start) / 60:.0f} min: {what} {tally.counts['done']}, "
                      f"findings {len(tally.findings)}", flush=True)
    return tally, keep, work, time.monotonic() - start


def finish(name, args, tally, keep, work, keys, seconds):
    """Prints the figures; the exit status (1 if anything was found)."""
    tally.summary(keys, seconds)
    if tally.findings:
        print(f"{name}: FAILED: {len(tally.findings)} findings; inputs kept in {keep}")
    if not tally.findings or args.keep_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if tally.findings else 0
