"""Write scikit-learn's handwritten digits as ``<folder>/digits.npz`` (an --input for demo.py)."""

from __future__ import annotations

from pathlib import Path
import sys

import numpy as np
from sklearn.datasets import load_digits


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python make_digits_data.py FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    folder.mkdir(parents=True, exist_ok=True)
    x, y = load_digits(return_X_y=True)
    np.savez_compressed(folder / "digits.npz", x=x, y=y)
    print(f"wrote {folder / 'digits.npz'} ({len(y)} images)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
