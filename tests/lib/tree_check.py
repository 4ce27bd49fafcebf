#!/usr/bin/env python3
"""The tree as docs/design/layout.md says it is, and nothing in it pointing at what is gone.

Checks, from the repository root (each failure printed as FILE:LINE: what is wrong):
  layout   every file docs/design/layout.md names in a src/ row exists in that folder, and every
           src/ source file is named in its folder's row (by its stem, `roles`, or its name,
           `roles.c`, `replay_*.c` as a pattern);
  sizes    no source file in src/ over 800 lines, no function over 100 lines (from the line
           that starts its definition to its closing brace: the code's style puts both braces
           of a function in column 0);
  paths    every path of the tree cited in src/, tests/, docs/, README.md, bench/ and scripts/
           (`src/sim/memory.c`, `plan/roles.h`, `bench/chaos.sh`, a bare `time_replay.c` in C
           comments) exists;
  symbols  every sl_/SL_ name cited in comments, docs and scripts is defined in src/, tests/
           or fuzz/ code (comments stripped), so a rename cannot leave its old name behind.
Exit 0 when all hold, 1 otherwise. Usage: tree_check.py [--max-file-lines N] [--max-function-lines N]
"""
import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys

SRC_FOLDERS = ("cli", "cluster", "ctl", "model", "plan", "profile", "profiler", "runtime",
               "search", "sim", "train", "util")


def tracked(patterns):
    """Files git tracks (and untracked ones it does not ignore) matching the patterns."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                              "--", *patterns], capture_output=True, text=True, check=True).stdout
        return sorted(f for f in set(out.split()) if os.path.exists(f))
    except (OSError, subprocess.CalledProcessError):
        found = set()
        for p in patterns:
            found.update(glob.glob(p, recursive=True))
        return sorted(found)


def strip_c_comments(text):
    """The code of a C file with its comments and string literals blanked, lines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def c_comments(text):
    """(line, comment text) of each /* */ or // comment of a C file."""
    for m in re.finditer(r"/\*.*?\*/|//[^\n]*", text, re.S):
        yield text.count("\n", 0, m.start()) + 1, m.group(0)


def check_layout(problems):
    path = "docs/design/layout.md"
    rows = {}
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.match(r"\|\s*`src/([a-z_/]+)/`\s*\|(.*)\|\s*$", line)
        if m:
            rows[m.group(1)] = (lineno, m.group(2))
    sources = tracked(["src/*.c", "src/*.h", "src/**/*.c", "src/**/*.h"])
    folders = sorted({os.path.dirname(f)[len("src/"):] for f in sources})
    for folder in folders:
        if folder not in rows:
            problems.append(f"{path}: no row for `src/{folder}/`")
    for folder, (lineno, text) in rows.items():
        names = re.findall(r"`([^`]+)`", text)
        files = [os.path.basename(f) for f in sources if os.path.dirname(f) == "src/" + folder]
        for name in names:
            for part in re.split(r",\s*", name):
                if re.fullmatch(r"[a-z0-9_*]+\.(c|h|\[ch\])", part):
                    pattern = part.replace(".[ch]", ".?").replace("?", "[ch]")
                    if not any(fnmatch.fnmatch(f, pattern) for f in files):
                        problems.append(f"{path}:{lineno}: `{part}` is not in src/{folder}/")
        # a part names a file by its stem (`roles`), by its name or its pair's (`roles.c` names
        # roles.h too), or by a pattern (`replay_*.c`, `cmd_<command>.c`)
        parts = [re.sub(r"<[^>]*>", "*", p.strip()) for n in names for p in re.split(r",\s*", n)]
        stems = {re.sub(r"\.(c|h|\[ch\])$", "", p) for p in parts}
        for f in files:
            stem = f.rsplit(".", 1)[0]
            named = stem in stems or any(("*" in p or "[" in p) and
                                         fnmatch.fnmatch(f, re.sub(r"\.c$", ".[ch]", p))
                                         for p in parts)
            if not named:
                problems.append(f"{path}:{lineno}: src/{folder}/{f} is not named in its row")


def check_sizes(problems, max_file, max_function):
    for f in tracked(["src/*.c", "src/*.h", "src/**/*.c", "src/**/*.h"]):
        lines = open(f, encoding="utf-8").read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > max_file:
            problems.append(f"{f}: {len(lines)} lines (at most {max_file})")
        if not f.endswith(".c"):
            continue
        for i, line in enumerate(lines):
            if line != "{":
                continue
            start = i - 1  # back to the line in column 0 that starts the definition
            while start > 0 and (not lines[start] or lines[start][0] in " \t" or
                                 "(" not in lines[start]):
                start -= 1
            end = next((j for j in range(i, len(lines)) if lines[j] == "}"), len(lines) - 1)
            if end - start + 1 > max_function:
                name = re.search(r"(\w+)\s*\(", lines[start])
                problems.append(f"{f}:{start + 1}: function {name.group(1) if name else '?'} is "
                                f"{end - start + 1} lines (at most {max_function})")


PATH_RE = re.compile(r"(?<![\w/.-])((?:src/|tests/|docs/|bench/|scripts/|data/|fuzz/)"
                     r"[A-Za-z0-9_./-]*[A-Za-z0-9_]"
                     r"|(?:" + "|".join(SRC_FOLDERS) + r")/[a-z0-9_]+\.[ch])(?![\w/-])")
COMMIT_RE = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
BARE_C_RE = re.compile(r"(?<![\w/.-])([a-z][a-z0-9_]*\.[ch])\b")


# Files of other projects that comments cite by name (the kernels' sources, NCCL's tree).
OTHER_PROJECTS = {"llm.c", "cblas.h", "expf.c"}


def is_pattern(p, after):
    """A file-name pattern or a placeholder (`tests/unit/test_<module>.c`, `data/validation/DIR`,
    `bench/bench_*`) rather than a path; or a path in another project's tree (`src/init.cc`)."""
    return (after[:1] in ("*", "<", "{", "[") or p.endswith(("_", "-")) or
            any(part.isupper() for part in p.split("/")) or p.endswith((".cc", ".cu")))


def path_exists(p):
    p = p.rstrip(".")
    return os.path.exists(p) or os.path.exists("src/" + p)


def check_paths(problems):
    texts = tracked(["src/**/*.c", "src/**/*.h", "tests/**", "docs/**/*.md", "README.md",
                     "bench/*", "bench/**/*.sh", "bench/**/*.py", "scripts/*", "Makefile",
                     "fuzz/*.c", "fuzz/*.h", ".ci/run", "data/**/README.md"])
    basenames = {os.path.basename(f) for f in tracked(["src/**/*.c", "src/**/*.h",
                                                       "tests/**/*.c", "fuzz/*.c", "fuzz/*.h",
                                                       "bench/*.c"])}
    for f in texts:
        if not os.path.isfile(f) or f.endswith((".json", ".csv", ".bin", ".txt")):
            continue
        try:
            text = open(f, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.split("\n"), 1):
            for m in PATH_RE.finditer(line):
                p = m.group(1)
                if ("$" in line[max(0, m.start() - 2):m.start()] or "/tmp/" in p or
                        is_pattern(p, line[m.end():m.end() + 1]) or COMMIT_RE.search(line)):
                    continue  # a variable, a pattern, or history: "... at commit 44fb9a8"
                if not path_exists(p):
                    problems.append(f"{f}:{lineno}: cites '{p}', which does not exist")
        if f.endswith((".c", ".h")):
            for lineno, comment in c_comments(text):
                for k, cline in enumerate(comment.split("\n")):
                    for m in BARE_C_RE.finditer(cline):
                        if m.group(1) not in basenames | OTHER_PROJECTS:
                            problems.append(f"{f}:{lineno + k}: cites '{m.group(1)}', "
                                            "which is no file of the tree")


def check_symbols(problems):
    code_files = tracked(["src/**/*.c", "src/**/*.h", "tests/**/*.c", "fuzz/*.c", "fuzz/*.h",
                          "bench/*.c"])
    defined = set()
    comments = []
    for f in code_files:
        text = open(f, encoding="utf-8").read()
        defined.update(re.findall(r"\b(?:sl|SL)_[A-Za-z0-9_]+", strip_c_comments(text)))
        comments.extend((f, ln, c) for ln, c in c_comments(text))
    docs = tracked(["docs/**/*.md", "README.md", "tests/**/*.sh", "tests/**/*.py", "bench/*.sh",
                    "bench/**/*.py", "scripts/*"])
    for f in docs:
        try:
            text = open(f, encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        comments.append((f, 1, text))
    for f, first, text in comments:
        for k, line in enumerate(text.split("\n")):
            for m in re.finditer(r"\b((?:sl|SL)_[A-Za-z0-9_]*[A-Za-z0-9])\b", line):
                name = m.group(1)
                if name in defined or name.startswith(("SL_TEST_", "SL_ENV")):
                    continue
                if line[m.end():m.end() + 1] == "*" or name.endswith("_"):
                    continue  # a prefix: sl_replay_*
                problems.append(f"{f}:{first + k}: cites '{name}', which is not defined")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-file-lines", type=int, default=800)
    ap.add_argument("--max-function-lines", type=int, default=100)
    a = ap.parse_args()
    problems = []
    check_layout(problems)
    check_sizes(problems, a.max_file_lines, a.max_function_lines)
    check_paths(problems)
    check_symbols(problems)
    for p in problems:
        print(p)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
