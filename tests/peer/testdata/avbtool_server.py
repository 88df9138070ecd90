#!/usr/bin/env python3
"""Runs avbtool.py (the path in argv[1]) for many command lines at the cost of one start.

Python's start and avbtool's imports cost most of a run of avbtool (0.6 s of CPU each on
the recording machine): this process imports what avbtool imports and compiles avbtool.py
once, then forks a child per request, which runs avbtool's code as __main__ with
sys.argv[0] the path of avbtool.py, in the request's directory, its stdout and stderr
into the files named. A request is a line of JSON on stdin, {"dir", "args", "stdout",
"stderr"}; the answer, a line on stdout, is the child's exit status. A Python traceback
gets this file's frames on top of avbtool's: its last line is avbtool's.

Used by tests/peer's -peer.record (avbtool_test.go); not a part of avbtool.
"""
import argparse, binascii, bisect, hashlib, json, math, os, struct, subprocess, sys, tempfile, time  # noqa: F401,E401
import traceback

path = sys.argv[1]
with open(path) as f:
    code = compile(f.read(), path, 'exec')

for line in sys.stdin:
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 125  # the harness failed, not avbtool
        try:
            os.chdir(req['dir'])
            out = os.open(req['stdout'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            err = os.open(req['stderr'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.close(out)
            os.close(err)
            sys.stdin = open(os.devnull)
            sys.argv = [path] + (req['args'] or [])
            status = 0
            try:
                exec(code, {'__name__': '__main__', '__file__': path})
            except SystemExit as e:
                if e.code is None:
                    status = 0
                elif isinstance(e.code, int):
                    status = e.code
                else:
                    sys.stderr.write(str(e.code) + '\n')
                    status = 1
            except BaseException:
                traceback.print_exc()
                status = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)
    _, st = os.waitpid(pid, 0)
    sys.stdout.write('%d\n' % os.waitstatus_to_exitcode(st))
    sys.stdout.flush()
