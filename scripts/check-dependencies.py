#!/usr/bin/env python3
"""Fails when a test or script uses a program or Python module that no package
in the install list (scripts/packages.txt) brings.

    /usr/bin/python3 scripts/check-dependencies.py [--root DIR] [--packages FILE] [--exclude PATH]...

What counts as a use: `find_program(VAR name...)` in CMake files, a name after
`command -v` anywhere, a `#!` line, an absolute /usr/bin or /usr/sbin path in source or
scripts, and a Python `import`. A program or module found here is traced to the
Debian package that owns it (dpkg-query -S); that package must be listed, be a
dependency of a listed package, or be part of every Debian system (Essential or
Priority required, as debootstrap's minbase installs). One not installed here
must be named by a listed package's `provides=`. The tests and the scripts the
test command runs may use only the packages of parts build, test, fuzz and
optional: those are what the test command installs (or uses when present).
Run it with Debian's python3: its modules are the ones Debian's packages
install.
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict

TEST_PARTS = {"build", "test", "fuzz", "optional"}
DEBIAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
SOURCE_SUFFIXES = (".sh", ".py", ".cmake", ".mjs", ".js", ".cpp", ".hpp")
FIND_PROGRAM_KEYWORDS = {
    "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "REQUIRED", "ENV", "VALIDATOR", "REGISTRY_VIEW",
    "CMAKE_FIND_ROOT_PATH_BOTH", "ONLY_CMAKE_FIND_ROOT_PATH", "NO_CACHE", "NAMES_PER_DIR",
}

FIND_PROGRAM = re.compile(r"find_program\(\s*(\w+)\s+([^)]*)\)", re.IGNORECASE)
COMMAND_V = re.compile(r"command\s+-v\s+([A-Za-z0-9_.+-]+)")
ABSOLUTE_PROGRAM = re.compile(r"(?<![\w./-])(/usr/s?bin/[A-Za-z0-9_.+-]*[A-Za-z0-9_+-])")
SHEBANG = re.compile(r"#!\s*(\S+)(?:\s+(\S+))?")
IMPORT = re.compile(r"^\s*(?:import\s+([\w., ]+)|from\s+(\w+)[\w.]*\s+import\b)", re.MULTILINE)


def read_packages(path):
    """The list: package -> (parts, provides)."""
    packages = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 2 or fields[0].startswith("#"):
                continue
            provides = set()
            for field in fields[2:]:
                if field.startswith("provides="):
                    provides.update(p for p in field[len("provides="):].split(",") if p)
            packages[fields[0]] = (set(fields[1].split(",")), provides)
    return packages


def tracked_files(root, excluded):
    """The files a checkout tracks (git when root is a work tree's top, else a walk)."""
    files = None
    if shutil.which("git"):
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
        if top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(root):
            listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, text=True, check=True)
            files = [f for f in listed.stdout.split("\0") if f]
    if files is None:
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules") and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
    return sorted(f for f in files if "node_modules/" not in f
                  and not any(f == e or f.startswith(e.rstrip("/") + "/") for e in excluded))


def is_code(name):
    base = os.path.basename(name)
    return base == "CMakeLists.txt" or base.endswith(SOURCE_SUFFIXES) or name.startswith(".ci/")


def uses_in(root, name, text):
    """(kind, what) pairs: kind "program" (a name or an absolute path) or "module"."""
    uses = set()
    if os.path.basename(name) == "CMakeLists.txt" or name.endswith(".cmake"):
        for _, args in FIND_PROGRAM.findall(text):
            for token in args.split():
                if token in FIND_PROGRAM_KEYWORDS or token.startswith("NO_"):
                    break
                if token != "NAMES" and "$" not in token:
                    uses.add(("program", token))
    uses.update(("program", p) for p in COMMAND_V.findall(text))
    uses.update(("program", p) for p in ABSOLUTE_PROGRAM.findall(text))
    shebang = SHEBANG.match(text)
    if shebang:
        interpreter, argument = shebang.groups()
        uses.add(("program", argument if interpreter.endswith("/env") and argument else interpreter))
    if name.endswith(".py"):
        # A module beside the file is the project's own.
        local = {os.path.splitext(f)[0] for f in os.listdir(os.path.dirname(os.path.join(root, name)))}
        for plain, source in IMPORT.findall(text):
            for module in ([m.split()[0] for m in plain.split(",") if m.strip()] if plain else [source]):
                top = module.split(".")[0]
                if top and top not in sys.stdlib_module_names and top not in local:
                    uses.add(("module", top))
    return uses


def dpkg_owner(path):
    """The package owning path, trying the /bin and /usr/bin spellings of merged /usr."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"), ("/usr/lib/", "/lib/")):
            if p.startswith(a):
                candidates.append(b + p[len(a):])
            elif p.startswith(b):
                candidates.append(a + p[len(b):])
    for p in dict.fromkeys(candidates):
        found = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        for line in found.stdout.splitlines():
            owners, _, owned = line.rpartition(": ")
            if owned == p and "diversion" not in owners:
                return owners.split(",")[0].strip().split(":")[0]
    return None


def installed_closure(roots):
    """Every installed package that roots, or every Debian system, brings in."""
    fmt = "${Package}\t${db:Status-Abbrev}\t${Essential}\t${Priority}\t${Pre-Depends}, ${Depends}\t${Provides}\n"
    rows = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True).stdout
    depends, providers, base = {}, defaultdict(set), set()
    for row in rows.splitlines():
        package, status, essential, priority, deps, provides = (row.split("\t") + [""] * 6)[:6]
        if not status.startswith("ii"):
            continue
        depends[package] = [[alt.split()[0].split(":")[0] for alt in group.split("|") if alt.strip()]
                            for group in deps.split(",") if group.strip()]
        for virtual in provides.split(","):
            if virtual.strip():
                providers[virtual.split()[0]].add(package)
        if essential == "yes" or priority == "required":
            base.add(package)
    seen, todo = set(), [p for p in set(roots) | base if p in depends]
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        for group in depends[package]:
            for name in group:
                todo += [p for p in ({name} | providers.get(name, set())) if p in depends]
    return seen


def find_module(name):
    spec = importlib.util.find_spec(name)
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return spec.origin
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else spec.origin


def files_the_tests_run(files, texts):
    """tests/ and fuzz/, and the scripts they or scripts/test.sh name, transitively."""
    chosen = {f for f in files if f.startswith(("tests/", "fuzz/")) or f in ("scripts/test.sh", ".ci/run")}
    named = re.compile(r"scripts/[\w.-]+")
    todo = list(chosen)
    while todo:
        for script in named.findall(texts.get(todo.pop(), "")):
            if script in texts and script not in chosen:
                chosen.add(script)
                todo.append(script)
    return chosen


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(here))
    parser.add_argument("--packages", default=None)
    parser.add_argument("--exclude", action="append", default=[])
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    listed = read_packages(args.packages or os.path.join(root, "scripts", "packages.txt"))

    texts = {}
    for name in tracked_files(root, args.exclude):
        path = os.path.join(root, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            head = f.read(2)
            if not is_code(name) and head != b"#!":
                continue
            texts[name] = (head + f.read()).decode("utf-8", "replace")
    for_tests = files_the_tests_run(texts, texts)

    users = defaultdict(set)
    for name, text in texts.items():
        for use in uses_in(root, name, text):
            users[use].add(name)

    every = installed_closure(listed)
    for_test_command = installed_closure(p for p, (parts, _) in listed.items() if parts & TEST_PARTS)
    provided = {what: package for package, (_, provides) in listed.items() for what in provides}

    problems, lines = [], []
    for (kind, what), names in sorted(users.items()):
        shown = what if kind == "program" else f"python3:{what}"
        by_tests = bool(names & for_tests)
        allowed = for_test_command if by_tests else every
        where = ", ".join(sorted(names)[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")
        if kind == "program":
            path = what if what.startswith("/") else shutil.which(what, path=DEBIAN_PATH)
            path = path if path and os.path.exists(path) else None
        else:
            path = find_module(what)
        if path is None:
            package = provided.get(shown) or (provided.get(os.path.basename(what)) if kind == "program" else None)
            if package and (not by_tests or listed[package][0] & TEST_PARTS):
                lines.append(f"  {shown}: not installed here; {package} provides it (scripts/packages.txt)")
            else:
                problems.append(f"{shown} (used by {where}) is not installed, and no package of "
                                f"scripts/packages.txt{' that the test command installs' if by_tests else ''} "
                                f"provides it: list the package that brings it, with provides={shown}")
            continue
        owner = dpkg_owner(path)
        if owner is None:
            problems.append(f"{shown} (used by {where}) is {path}, which no Debian package owns: "
                            "use one from a Debian package (and Debian's python3 for modules)")
        elif owner not in allowed:
            problems.append(f"{shown} (used by {where}) comes from the Debian package {owner}, which "
                            f"scripts/packages.txt does not bring{' in the parts the test command installs' if by_tests else ''}: "
                            f"add {owner} there")
        else:
            lines.append(f"  {shown}: {owner}")

    print(f"{len(users)} programs and modules used, from {len(texts)} files:")
    print("\n".join(lines))
    if problems:
        print(f"\n{len(problems)} not brought by the install list:")
        for problem in problems:
            print(f"  {problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
