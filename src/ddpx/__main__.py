"""``python -m ddpx`` is the ``ddpx`` command."""

from ddpx.cli import main

if __name__ == "__main__":
    main()
