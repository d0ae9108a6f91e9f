"""A command's own ``--help`` opens with what it does: argparse shows a subcommand's ``help`` line only in its
parent's list of commands, so ``fedbench run --help`` printed the usage and the options alone."""

from __future__ import annotations

import argparse


def described(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser``, each of its subcommands at any depth that has no description given its ``help`` line as one
    (a sentence: first letter capitalised, a full stop at the end)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                text = helps.get(name)
                if sub.description is None and text:
                    sub.description = text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
                described(sub)
    return parser
