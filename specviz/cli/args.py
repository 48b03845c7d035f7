"""Argument parsing shared by every command: one-line errors, exit code 2, and range-checked types.

argparse's own error prints the whole usage before the message; a user who
mistyped one value should see one line saying which value and why.
"""
from __future__ import annotations

import argparse


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, `<error_prefix>: error: <message>`, and exit code 2."""

    def __init__(self, *args, error_prefix: str = "specviz", **kwargs):
        super().__init__(*args, **kwargs)
        self.error_prefix = error_prefix

    def error(self, message):
        self.exit(2, f"{self.error_prefix}: error: {message}\n")


def bounded(kind, lo, hi, name):
    """An argparse type: `kind` parsed from text and checked to lie in [lo, hi]."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {what}, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{name} must be in [{lo}, {hi}], got {text}")
        return value
    return parse
