"""Recipes and their keys: finding and reading recipe files, typed ``KEY=VALUE`` overrides,
resolving a recipe against the keys the core, the task and the model declare."""
