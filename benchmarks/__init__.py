"""The benchmarks, one folder each (its entry script ``run.py`` beside the loops and probes only it
uses), and ``common/`` for what several share; ``README.md`` lists them."""
