#!/usr/bin/env python3
"""Summarises the CSV of bench/kernel_profile.py under ncu: per kernel name,
how many launches and their total and mean duration (µs), longest first.

    python3 bench/kernel_summary.py NCU_CSV STEPS
"""
import collections
import csv
import sys


def main(path, steps):
    rows = list(csv.DictReader(line for line in open(path) if line.startswith('"')))
    total = collections.defaultdict(float)
    count = collections.Counter()
    for row in rows:
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0,
                 "msecond": 1e3, "ms": 1e3}[row["Metric Unit"]]
        name = row["Kernel Name"][:60]
        total[name] += value * scale
        count[name] += 1
    steps = int(steps)
    print(f"  {'kernel':60s} {'launches':>8s} {'total us':>9s} {'us/launch':>9s} {'us/step':>8s}")
    for name, t in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"  {name:60s} {count[name]:8d} {t:9.1f} {t / count[name]:9.2f} {t / steps:8.2f}")
    print(f"  {'all kernels':60s} {sum(count.values()):8d} {sum(total.values()):9.1f} "
          f"{'':9s} {sum(total.values()) / steps:8.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
