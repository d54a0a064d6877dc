"""``shiftlearn datasets``: list the data sets, verify their SHA-256, download missing files.

Exit status 1 when a file is missing or corrupt (the listing still names every file), so a
script can check the data home with ``shiftlearn datasets && ...``.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers, parents) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "datasets", parents=parents,
        help="list the data sets, verify their SHA-256, download missing files",
        description="List the real data sets, verify the SHA-256 of every file in the data "
                    "home, and (with --download) fetch the missing ones from their "
                    "commit-pinned origin.")
    p.add_argument("--download", action="store_true",
                   help="download missing files from their commit-pinned origin")
    return p


def _fmt_size(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MB" if n_bytes >= 2**20 else f"{n_bytes / 1024:.0f} kB"


def _domain_summary(ds) -> str:
    sizes = [(d, ds.domains[d][0].shape[0]) for d in ds.domain_names]
    if len(sizes) > 6:
        total = sum(n for _, n in sizes)
        return (f"{len(sizes)} domains ({sizes[0][0]} .. {sizes[-1][0]}, "
                f"{min(n for _, n in sizes)}-{max(n for _, n in sizes)} rows each), "
                f"{total} rows")
    return ", ".join(f"{d} {n}" for d, n in sizes)


def run(args: argparse.Namespace) -> int:
    from ..datasets import FILES, LOADERS, DataFileError, fetch_file, get_data_home

    print(f"data home: {get_data_home(args.data_home)}")
    bad = 0
    for name, loader in LOADERS.items():
        ok = True
        lines = []
        for spec in FILES[name]:
            try:
                path = fetch_file(spec, args.data_home, download=args.download)
                status = f"{_fmt_size(path.stat().st_size):>8s}  ok (sha256 verified)"
            except DataFileError as exc:
                status = f"FAILED: {exc}"
                ok = False
                bad += 1
            lines.append(f"    {spec.relpath():52s} {status}")
        if ok:
            ds = loader(args.data_home, download=False)
            X0 = ds.domains[ds.domain_names[0]][0]
            print(f"{name}: {ds.description}; {X0.shape[1]} features")
            print(f"    domains: {_domain_summary(ds)}")
            print(f"    preprocessing: {ds.preprocessing}; {len(ds.tasks)} customary tasks"
                  if ds.tasks else
                  f"    preprocessing: {ds.preprocessing}; target: {ds.target_name}")
        else:
            print(f"{name}:")
        for line in lines:
            print(line)
    if bad:
        print(f"{bad} file(s) missing or corrupt. Run `shiftlearn datasets --download` or point "
              "SHIFTLEARN_DATA (or --data-home) at a folder holding them.")
    return 1 if bad else 0
