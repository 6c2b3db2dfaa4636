"""Generate docs/reference/recipes.md from the recipe files every installed plugin registers."""

from pathlib import Path

import mkdocs_gen_files

from ddpx.config.listing import list_recipes
from ddpx.config.recipe import resolve_recipe
from ddpx.plugin_host.registry import load_registry

registry = load_registry()
lines = [
    "# Built-in recipes",
    "",
    "Generated from the recipe files at build time; `ddpx show NAME` prints the same.",
    "",
]
for row in list_recipes(registry):
    source = Path(registry.all("recipes")[row.name].path)
    header = [line[2:] for line in source.read_text(encoding="utf-8").splitlines() if line.startswith("# ")]
    recipe = resolve_recipe(registry, row.name)
    lines += [
        f"## `{row.name}`",
        "",
        f"{row.description}",
        "",
        f"Task `{row.task}`, model `{row.model}`, held-out metric `{row.metric}`; from plugin `{row.plugin}`.",
        "",
        *(line for line in header),
        "",
        "```toml",
        recipe.to_toml().rstrip(),
        "```",
        "",
    ]
with mkdocs_gen_files.open("reference/recipes.md", "w") as fh:
    fh.write("\n".join(lines) + "\n")
