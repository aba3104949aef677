"""Packages whose public names load their modules on first use (so ``import ragexam`` costs no numpy).

Each package declares what it exports and from where, then asks for its module hooks::

    _LAZY = {"Chunker": "ragexam.data.chunking",          # the name, from that module
             "plan": ("ragexam.api", "generate_plan"),             # under another name
             "plots": ("ragexam.plots", None)}              # the module itself
    __getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
    __all__ = sorted(_LAZY)

A module given with a leading ``.`` is relative to the package.  A name is imported once and kept in the
package's namespace.  A package exporting many names from few modules writes the table by module::

    _LAZY = by_module({".settings": "LLMSettings Endpoint", ".client": "LLMClient ChatReply"})
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Mapping, MutableMapping, Optional, Tuple, Union

__all__ = ["lazy_exports", "by_module"]

Target = Union[str, Tuple[str, Optional[str]]]


def by_module(groups: Mapping[str, str]) -> Dict[str, str]:
    """``{name: module}`` from ``{module: "name name ..."}`` (names separated by white space); a name given twice is
    a mistake of the table and raises ``ValueError``."""
    table: Dict[str, str] = {}
    for module, names in groups.items():
        for name in names.split():
            if name in table:
                raise ValueError(f"{name!r} is exported from both {table[name]!r} and {module!r}")
            table[name] = module
    return table


def lazy_exports(package: str, table: Mapping[str, Target], namespace: MutableMapping[str, Any]
                 ) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` exporting ``table``'s names (module docstring)."""
    targets: Dict[str, Tuple[str, Optional[str]]] = {}
    for name, target in table.items():
        module, attr = (target, name) if isinstance(target, str) else target
        targets[name] = (package + module if module.startswith(".") else module, attr)

    def __getattr__(name: str) -> Any:
        try:
            module, attr = targets[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        loaded = importlib.import_module(module)
        value = loaded if attr is None else getattr(loaded, attr)
        namespace[name] = value
        return value

    def __dir__() -> List[str]:
        return sorted(set(namespace) | set(targets))

    return __getattr__, __dir__
