"""Do the episode tools pay for themselves? A running account, read at every task start.

The episode tools (``begin_episode``, ``end_episode``, ``condense_context``) cost requests:
each call is a model turn that moves no robot, sent with the whole working set. They save
tokens when what they let the harness evict (an archived episode, a condensed memory) stays
out of the requests that follow. Whether that trade pays depends on the model and the task,
so the harness does not decide it once per config: :class:`EpisodeLedger` keeps both sides,
in tokens sent, and :meth:`EpisodeLedger.offer` says at each task start whether the tools
are offered for that task.

- **spent**: the size of every request whose decision was an episode-tool call;
- **saved**: for every request, the tokens the tools' evictions keep out of it
  (:meth:`hold_out` adds what one eviction freed, :meth:`tick` counts it once per request);
  a checkpoint fold or an ended task's retirement would have removed them anyway, so
  :meth:`release` stops counting them there.

The tools are offered while they have not been tried (a session's first tasks), and after
that while what they saved is at least what they spent. A task without them loses nothing:
the harness still evicts completed exchanges and folds checkpoints, and every output stays
reachable by address.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EpisodeLedger"]


@dataclass
class EpisodeLedger:
    """One context's account of the episode tools (see the module docstring)."""

    spent: int = 0
    saved: int = 0
    held_out: int = 0
    """Tokens the tools' evictions currently keep out of every request."""
    calls: int = 0
    tasks_offered: int = 0
    """Tasks in which the tools were offered."""

    def charge(self, request_tokens: int) -> None:
        """An episode-tool call: its request is what it cost."""
        self.calls += 1
        self.spent += max(0, request_tokens)

    def hold_out(self, tokens: int) -> None:
        """An eviction the tools made possible freed ``tokens``."""
        self.held_out += max(0, tokens)

    def release(self) -> None:
        """A fold removed the rest anyway: nothing more is counted as the tools' saving."""
        self.held_out = 0

    def tick(self) -> None:
        """One request was sent without the tokens held out."""
        self.saved += self.held_out

    def offer(self) -> bool:
        """Offer the tools in the next task? Yes until they were offered in a task, and
        after that while they saved at least what they spent (a model that was offered them
        and never called them spent nothing and saved nothing: they are withheld, and their
        definitions leave the prompt)."""
        if self.tasks_offered == 0:
            return True
        if self.calls == 0:
            return False
        return self.saved >= self.spent

    def describe(self) -> str:
        return (
            f"the episode tools were called {self.calls} time(s) in "
            f"{self.tasks_offered} task(s), spending about {self.spent} request tokens and "
            f"keeping about {self.saved} out of later requests"
        )
