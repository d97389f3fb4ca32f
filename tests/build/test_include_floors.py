#!/usr/bin/env python3
"""No source file includes a header from a floor above its own (STYLE.md, "Layers that only point
down"). The floors, lowest first:

  core/                     the shared core: includes nothing of the project above it
  conv/, ops/, models/      the suites: core only (and each other)
  baselines/                the library backends: core and the suites
  experiments/              the registries (experiments/registry/) and the drivers: anything

Every `#include "..."` of every .hpp/.cpp/.cu/.cuh/.h under those folders is resolved against the
repository root; a back-arrow is reported as FILE:LINE with the header and both floors. tests/ and
scripts/ are not floors (tests include what they test).

Run: python3 tests/build/test_include_floors.py (CTest: include_floors; unittest: the tree has no
back-arrow, a planted one in each direction is named by file and line).
     python3 tests/build/test_include_floors.py --root DIR   checks the tree at DIR, prints every
back-arrow, exits 1 when there is one (e.g. a `git worktree` of an older commit).
"""

import os
import re
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FLOORS = {"core": 0, "conv": 1, "ops": 1, "models": 1, "baselines": 2, "experiments": 3}
FLOOR_NAMES = {0: "core", 1: "suites (conv, ops, models)", 2: "baselines",
               3: "registries and drivers (experiments)"}
SOURCES = (".hpp", ".cpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def floor_of(rel):
    """The floor of a root-relative path, or None outside the floors."""
    return FLOORS.get(rel.replace(os.sep, "/").split("/", 1)[0])


def back_arrows(root):
    """[(file, line, header, file's floor, header's floor)] of every include that points up."""
    found = []
    for top in sorted(FLOORS):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                mine = floor_of(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        if os.path.isfile(os.path.join(root, header)):
                            target = header
                        elif os.path.isfile(os.path.join(dirpath, header)):
                            target = os.path.relpath(os.path.join(dirpath, header), root)
                        else:
                            continue  # not the project's (a library header in quotes)
                        theirs = floor_of(target)
                        if theirs is not None and theirs > mine:
                            found.append((rel, number, header, mine, theirs))
    return found


def describe(arrow):
    rel, number, header, mine, theirs = arrow
    return (f"{rel}:{number}: includes \"{header}\", a floor above its own "
            f"({FLOOR_NAMES[mine]} -> {FLOOR_NAMES[theirs]})")


class IncludeFloors(unittest.TestCase):
    def test_the_tree_has_no_back_arrow(self):
        self.assertEqual([describe(a) for a in back_arrows(ROOT)], [])

    def test_the_tree_has_sources_on_every_floor(self):
        # The walk sees the project: an empty walk would pass the test above for nothing.
        for top in FLOORS:
            with self.subTest(floor=top):
                self.assertTrue(any(n.endswith(SOURCES) for _, _, names in
                                    os.walk(os.path.join(ROOT, top)) for n in names), top)

    def test_planted_back_arrows_are_named_by_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = {
                "core/a.hpp": '#pragma once\n#include "conv/b.hpp"\n',
                "conv/b.hpp": '#pragma once\n#include "core/a.hpp"\n#include "baselines/c.hpp"\n',
                "ops/cuda/k.cu": '#include <cstdio>\n# include "experiments/registry/r.hpp"\n',
                "baselines/c.hpp": '#pragma once\n#include "conv/b.hpp"\n#include "Halide.h"\n'
                                   '#include "experiments/registry/r.hpp"\n',
                "experiments/registry/r.hpp": '#pragma once\n#include "baselines/c.hpp"\n',
                "experiments/d.cpp": '#include "experiments/registry/r.hpp"\n#include "b.hpp"\n',
                "tests/t.cpp": '#include "experiments/registry/r.hpp"\n',
            }
            for rel, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            got = [(a[0].replace(os.sep, "/"), a[1], a[2]) for a in back_arrows(tmp)]
            self.assertEqual(sorted(got), [
                ("baselines/c.hpp", 4, "experiments/registry/r.hpp"),
                ("conv/b.hpp", 3, "baselines/c.hpp"),
                ("core/a.hpp", 2, "conv/b.hpp"),
                ("ops/cuda/k.cu", 2, "experiments/registry/r.hpp"),
            ])
            self.assertIn("core/a.hpp:2: includes \"conv/b.hpp\"", describe(back_arrows(tmp)[2]))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--root":
        if not os.path.isdir(sys.argv[2]):
            print(f"test_include_floors.py: error: --root: '{sys.argv[2]}' is not a folder",
                  file=sys.stderr)
            return 2
        arrows = back_arrows(sys.argv[2])
        for a in arrows:
            print(describe(a))
        print(f"{len(arrows)} include(s) from a floor above")
        return 1 if arrows else 0
    unittest.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
