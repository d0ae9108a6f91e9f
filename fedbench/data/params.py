"""A params file read as DVC reads it (YAML 1.2): a key repeated in a mapping is an error, not "last one wins", and
``1e-3`` is a number, not a string. The one reader of fedbench.config and ``fedbench data --params``; every problem
is a ConfigError in one line naming the file. It lives in fedbench.data, the lowest package that reads a params
file, so that config (above data) and the data command share it without a floor of its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from fedbench.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the two YAML 1.2 behaviours of DVC's reader that matter here: a key repeated
    in one mapping is an error, and a float needs no dot (``1e-3``)."""


def _mapping_without_repeats(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # '<<' merges keys in; explicit keys then override them
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise ConfigError(f"line {line}: key {key!r} repeats line {seen[key]} (YAML forbids repeated keys "
                              "and DVC refuses the file); keep one")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_repeats)
_Loader.add_implicit_resolver(  # YAML 1.2 floats: 1e-3, 1.5E+2 (PyYAML's YAML 1.1 reads them as strings)
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def parse_value(text: str) -> Any:
    """One YAML value as params.yaml would read it (for ``--set KEY=VALUE``); ConfigError if it is not YAML."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML ({' '.join(str(exc).split())})") from None


def read_params(path: str | Path) -> dict[str, Any]:
    """The mapping in params file ``path`` ({} for an empty file)."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(), Loader=_Loader)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ConfigError(f"{path}: cannot be read as a params file ({why}); give a YAML file, e.g. --params "
                          "params.yaml") from None
    except yaml.YAMLError as exc:
        message = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid YAML ({message})") from None
    except ConfigError as exc:  # a repeated key
        raise ConfigError(f"{path}: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return raw
