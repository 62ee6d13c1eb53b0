"""The harness side of the robot and its world.

- :mod:`~harness.world.observation`: observations rendered for the model (text, frames);
- :mod:`~harness.world.physical`: tools generated from a driver's actions;
- :mod:`~harness.world.evaluation`: the hidden ``evaluate_run`` hook (per action);
- :mod:`~harness.world.scene`: the scene graph as the loop sees it, with its query tools.
"""

__all__: list[str] = []
