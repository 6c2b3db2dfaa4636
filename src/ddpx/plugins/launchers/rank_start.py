"""Imported in the spawn launcher's fork server only (never in the ``ddpx`` process), for what its
import does there: Ctrl-C (SIGINT) is held, blocked, in the fork server, so every rank forked from it
starts with Ctrl-C held. A stop that reaches a rank while Python is still setting the new process up
(unpickling its arguments, before any rank code runs, where a ``KeyboardInterrupt`` would end the rank
with a traceback printed by ``multiprocessing``) waits, pending, until the rank's first line lets it
through (``spawn._rank_entry``), where it stops the rank as any stop does. A stop request (SIGUSR1),
whose default action would end the process, is held the same way, in the fork server and in each
rank until the rank's handler for it is in place (``ddpx.rank.worker.run_rank``), which remembers it
and stops at the training loop's first check."""

import signal

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGUSR1})
