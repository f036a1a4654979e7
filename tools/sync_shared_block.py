#!/usr/bin/env python3
"""Copy the shared model block of calc_transformer_params.py (between its begin/end markers) over
the copy in every other calc_*.py that has one. tests/test_shared_copies.py checks they agree."""
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "# === shared model spec: begin ===", "# === shared model spec: end ==="


def split(text):
    i, j = text.index(BEGIN), text.index(END) + len(END)
    return text[:i], text[i:j], text[j:]


def main():
    master = os.path.join(ROOT, "calc_transformer_params.py")
    _, block, _ = split(open(master, encoding="utf-8").read())
    for path in sorted(glob.glob(os.path.join(ROOT, "calc_*.py"))):
        text = open(path, encoding="utf-8").read()
        if path == master or BEGIN not in text:
            continue
        head, old, tail = split(text)
        if old != block:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(head + block + tail)
            print(f"updated {os.path.basename(path)}")


if __name__ == "__main__":
    main()
