"""verl plugin: importing this module registers everything G2PO adds to verl.

- the ``cpu`` platform (:mod:`.cpu`; first, so that it exists before any verl module asks
  for the platform; chosen only by ``VERL_PLATFORM=cpu``),
- ``algorithm.adv_estimator=NAME`` for every g2po library estimator (:mod:`.estimator`),
- ``trainer.v1.trainer_mode=g2po`` (:mod:`.trainer`),
- the ``g2po_env`` agent loop (:mod:`.agent_loop`),
- the ``hf`` rollout (:mod:`.hf_rollout`).

verl imports it in every process that imports verl, through the ``verl.plugins`` entry point
(pyproject.toml) and through ``VERL_USE_EXTERNAL_MODULES`` (set in the Ray runtime environment
by ``g2po.yaml``; unlike the entry point, a failure there is loud).
"""

import g2po.trainers.verl_backend.cpu as cpu  # noqa: I001  (before every other verl import)
import g2po.trainers.verl_backend.agent_loop as agent_loop
import g2po.trainers.verl_backend.estimator as estimator
import g2po.trainers.verl_backend.hf_rollout as hf_rollout
import g2po.trainers.verl_backend.trainer as trainer

__all__ = ["cpu", "estimator", "trainer", "agent_loop", "hf_rollout"]
