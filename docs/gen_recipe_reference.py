"""Generate docs/reference/recipes.md from the recipe files every installed plugin registers."""

from pathlib import Path

import mkdocs_gen_files

from ddpx.config.listing import list_recipes
from ddpx.config.recipe import resolve_recipe
from ddpx.config.recipe_bases import OWN_KEYS, read_with_bases
from ddpx.config.recipe_files import to_toml
from ddpx.config.values import unflatten
from ddpx.plugin_host.registry import load_registry

registry = load_registry()
lines = [
    "# Built-in recipes",
    "",
    "Generated from the recipe files at build time; `ddpx show NAME` prints the same. The presets, bases",
    "the recipes build on with `extends` ([Recipes built on others](../recipes.md#recipes-built-on-others)),",
    "follow the recipes.",
    "",
]


def header(name: str) -> list[str]:
    source = Path(registry.all("recipes")[name].path)
    return [line[2:] for line in source.read_text(encoding="utf-8").splitlines() if line.startswith("# ")]


def built_on(name: str) -> str:
    bases = read_with_bases(registry, Path(registry.all("recipes")[name].path)).bases
    return f" Built on {', '.join(f'`{base}`' for base in bases)} (`extends`)." if bases else ""


for row in list_recipes(registry):
    recipe = resolve_recipe(registry, row.name)
    lines += [
        f"## `{row.name}`",
        "",
        f"{row.description}",
        "",
        f"Task `{row.task}`, model `{row.model}`, held-out metric `{row.metric}`; from plugin `{row.plugin}`."
        + built_on(row.name),
        "",
        *header(row.name),
        "",
        "```toml",
        recipe.to_toml().rstrip(),
        "```",
        "",
    ]
presets = list_recipes(registry, presets=True)
lines += ["# Presets", ""] if presets else []
for row in presets:
    values = read_with_bases(registry, Path(registry.all("recipes")[row.name].path)).values
    lines += [
        f"## `{row.name}`",
        "",
        f"{row.description}",
        "",
        f'A preset from plugin `{row.plugin}`: recipes build on it with `extends = "{row.name}"`.' + built_on(row.name),
        "",
        *header(row.name),
        "",
        "The keys it gives (with those of its own bases):",
        "",
        "```toml",
        to_toml(unflatten({k: v for k, v in values.items() if k not in OWN_KEYS})).rstrip(),
        "```",
        "",
    ]
with mkdocs_gen_files.open("reference/recipes.md", "w") as fh:
    fh.write("\n".join(lines) + "\n")
