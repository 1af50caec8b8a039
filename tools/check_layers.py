#!/usr/bin/env python3
"""Checks every #include of the project's sources against the floors of layers.txt.

usage: tools/check_layers.py [REPO]   (exit 1 and one line per include that runs up a floor)

A source's area is the longest folder of layers.txt that holds it. It may include its own area's
headers and those of any area on a lower line; an include of an area on its own line (a sibling
room) or on a higher line is reported, as is a source under a folder that layers.txt does not
place. tests/ may include anything; tools/ is the top floor.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_floors(path):
    floors = {}  # folder -> floor number, 0 = top
    for n, line in enumerate(l for l in open(path) if l.strip() and not l.lstrip().startswith('#')):
        for folder in line.split('#')[0].split():
            if folder in floors:
                sys.exit(f'{path}: {folder} is named twice')
            floors[folder] = n
    return floors


def area_of(path, floors):
    parts = path.split('/')
    for k in range(len(parts) - 1, 0, -1):
        folder = '/'.join(parts[:k])
        if folder in floors:
            return folder
    return None


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    os.chdir(repo)
    floors = read_floors('layers.txt')
    files = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
                           capture_output=True, text=True, check=True).stdout.split('\n')
    sources = [f for f in files if f.endswith(('.h', '.cpp')) and os.path.isfile(f)
               and not f.startswith('tests/')]
    problems = []
    for f in sorted(sources):
        area = area_of(f, floors)
        if area is None:
            problems.append(f'{f}: in no folder of layers.txt: add its folder to a floor')
            continue
        with open(f, encoding='utf-8') as src:
            for lineno, line in enumerate(src, 1):
                m = INCLUDE.match(line)
                if not m or not os.path.isfile(m.group(1)):
                    continue  # a system header, or one generated into the build folder
                target = area_of(m.group(1), floors)
                if target is None or target == area:
                    continue
                if floors[target] <= floors[area]:
                    how = 'a room of the same floor' if floors[target] == floors[area] else 'a higher floor'
                    problems.append(f'{f}:{lineno}: includes "{m.group(1)}" of {target}, '
                                    f'{how} than {area} (layers.txt)')
    for p in problems:
        print(p)
    print(f'{len(sources)} sources checked against {len(floors)} areas of layers.txt: '
          f'{len(problems)} include(s) out of order')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
