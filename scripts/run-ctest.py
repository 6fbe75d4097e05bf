#!/usr/bin/env python3
"""Runs ctest with the arguments given, then says what was skipped and why.

    python3 scripts/run-ctest.py [CTEST ARGUMENTS...]

A test skips by printing "troupe-skip: WHY" (and, for a script, exiting
77); WHY names what is missing and the Debian package that brings it. The
test command installs everything the tests use, so a skip means an install
step is missing: it fails the run. The one skip allowed is a PostgreSQL case
when scripts/with-postgres.sh could start no server (TROUPE_TEST_POSTGRES
unset; TROUPE_POSTGRES_UNAVAILABLE says why). The last line counts the
tests in the form "tests: N passed, N failed, N skipped".
"""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

SKIP_MARK = "troupe-skip:"
POSTGRES_SKIP = "no PostgreSQL server"


def skip_reason(case):
    """The first "troupe-skip:" line a skipped test printed, or ctest's own word."""
    for line in (case.findtext("system-out") or "").splitlines():
        at = line.find(SKIP_MARK)
        if at != -1:
            return line[at + len(SKIP_MARK):].strip()
    skipped = case.find("skipped")
    message = skipped.get("message", "") if skipped is not None else ""
    return f"no reason printed ({message or 'ctest did not run it'})"


def main(ctest_args):
    with tempfile.TemporaryDirectory(prefix="troupe-ctest.") as scratch:
        results = os.path.join(scratch, "results.xml")
        code = subprocess.call(["ctest", *ctest_args, "--output-junit", results])
        try:
            cases = ElementTree.parse(results).getroot().findall("testcase")
        except (OSError, ElementTree.ParseError) as error:
            print(f"run-ctest: ctest wrote no results ({error})", file=sys.stderr)
            return code or 1

    server_up = bool(os.environ.get("TROUPE_TEST_POSTGRES"))
    passed = [c for c in cases if c.get("status") == "run"]
    skipped = [c for c in cases if c.get("status") in ("notrun", "disabled")]
    failed = [c for c in cases if c.get("status") not in ("run", "notrun", "disabled")]
    refused = []
    print()
    if skipped:
        print(f"skipped {len(skipped)}:")
        for case in skipped:
            reason = skip_reason(case)
            allowed = not server_up and reason.startswith(POSTGRES_SKIP)
            print(f"  {case.get('name')}: {reason}{'' if allowed else '  [may not skip]'}")
            if not allowed:
                refused.append(case)
        if len(refused) < len(skipped):
            why = os.environ.get("TROUPE_POSTGRES_UNAVAILABLE", "TROUPE_TEST_POSTGRES is unset")
            print(f"  (PostgreSQL cases may skip: no server could start, {why})")
        if refused:
            print(f"{len(refused)} may not skip: the test command installs every package the tests use "
                  "(scripts/packages.txt, part test; a missing one is added there), and the PostgreSQL "
                  "cases skip only when no server could start")
    else:
        print("skipped: none")
    print(f"tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    if code != 0:
        return code
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
