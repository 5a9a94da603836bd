"""What the tests share: fixtures' helpers, far ends, worlds, and the checkout's root."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
