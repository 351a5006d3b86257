"""A run's task stages (stored by the run store: `store_stages.py`) and how a run enters one (`domain/task_stages.py`).

The run service stops at three points of a run (`RunScheduler.hold`): before its plan is queued (`pre_plan`),
after its plan (`post_plan`) and after its confirmation (`pre_apply`). At each, `enter` asks every registered
`StageParticipant` (`stage_participants.py`; the composition root registers them, `wiring/task_stage_services.py`)
to `begin`; when one returned ids, the stage is written `running` and the run waits in `<stage>_running` until
`stage_progress.py` moves it on. When none did, nothing is written and the run goes on exactly as without stages.

Participants that also have `prepare(context) -> ids` are asked when the run is created, for each stage: what they
prepare is written as a `pending` stage (HCP Terraform lists a run's stages, and their pending task results, from
its creation on); `begin` is asked again when the run reaches it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from terrace.domain import clock, stage_usage
from terrace.domain import task_stages as ts
from terrace.domain.errors import NotFound
from terrace.domain.runs import Run
from terrace.domain.task_stages import TaskStage
from terrace.services.runs.stage_participants import StageContext, StageParticipant
from terrace.services.runs.store import ConditionFailed
from terrace.services.runs.store_stages import TaskStageStore

log = logging.getLogger("terrace.task_stages")

Participants = Callable[[], list[StageParticipant]]


def context(run: Run, stage: TaskStage | str, stage_id: str | None = None) -> StageContext:
    name = stage.stage if isinstance(stage, TaskStage) else stage
    sid = stage.id if isinstance(stage, TaskStage) else (stage_id or ts.stage_id(run.id, name))
    plan_json = run.plan.json_key if name != ts.PRE_PLAN else None
    return StageContext(run=run, stage_id=sid, stage=name, plan_json_key=plan_json)


class TaskStages:
    def __init__(self, store: TaskStageStore, participants: Participants) -> None:
        self._store = store
        self._participants = participants  # the registry, read when first needed (participants use run services)

    @property
    def participants(self) -> list[StageParticipant]:
        return list(self._participants())

    def asked(self, run: Run) -> list[StageParticipant]:
        """The participants asked for `run` at its stage points: those its organization may have something of
        (`domain/stage_usage.py`, one query, held through a use case); all once the run has a stage."""
        participants = self.participants
        if not participants or run.task_stage_ids:
            return participants
        markers = self._store.usage_markers(run.organization)
        return [p for p in participants if stage_usage.asks(p.kind, markers)]

    def taking_part(self, stage: TaskStage) -> list[StageParticipant]:
        """The participants that began (or prepared) something in `stage`."""
        return [p for p in self.participants if stage.results.get(p.kind)]

    # reads -------------------------------------------------------------------------------
    def find(self, stage_id: str) -> TaskStage | None:
        return self._store.find(stage_id)

    def load(self, stage_id: str) -> TaskStage:
        found = self.find(stage_id)
        if found is None:
            raise NotFound(f"task stage {stage_id} not found")
        return found

    def of_run(self, run: Run) -> list[TaskStage]:
        """The stages a run lists (one batch read; none for a run without stages)."""
        if not run.task_stage_ids:
            return []
        found = self._store.many(run.task_stage_ids)
        return sorted(found, key=lambda s: ts.STAGES.index(s.stage))

    def stored_for(self, run_id: str) -> list[TaskStage]:
        """Every stage stored for a run, whether or not the run lists it yet (one query)."""
        return self._store.of_run(run_id)

    def save(self, stage: TaskStage, *, new: bool = False) -> None:
        """A conditional write (new: absent; else: the version read). Raises ConditionFailed."""
        self._store.save(stage, new=new)

    # creation ----------------------------------------------------------------------------
    def prepare(self, run: Run) -> None:
        """At creation (before the run is first written): the stages participants prepare, written `pending`
        and listed on the run. Nothing is written when no participant prepares anything."""
        now = clock.now_iso()
        asked = self.asked(run)
        for name in ts.STAGES if asked else ():
            ctx = context(run, name)
            stage = self._new(run, name, now)
            for participant in asked:
                prepare: Callable[[StageContext], list[str]] | None = getattr(participant, "prepare", None)
                if prepare is not None:
                    stage.add(participant.kind, list(prepare(ctx)))
            if any(stage.results.values()):
                stage.mark(ts.TS_PENDING, now)
                self.save(stage, new=True)
                run.task_stage_ids.append(stage.id)

    @staticmethod
    def _new(run: Run, name: str, now: str) -> TaskStage:
        return TaskStage(
            id=ts.stage_id(run.id, name),
            run_id=run.id,
            organization=run.organization,
            workspace_id=run.workspace_id,
            stage=name,
            created_at=now,
            updated_at=now,
        )

    # the stage points --------------------------------------------------------------------
    def enter(self, run: Run, name: str) -> TaskStage | None:
        """The run reached stage `name`: the running stage it must wait in, or None (nothing takes part: nothing
        written). Safe to call again for the same run and stage (a retried write): a stage already running is
        returned as it is, its participants are not asked again. Nobody asked and no stage listed: nothing of the
        run's can have been written, nothing is read."""
        asked = self.asked(run)
        if not asked and not run.task_stage_ids:
            return None
        existing = self.find(ts.stage_id(run.id, name))
        if existing is not None and existing.status != ts.TS_PENDING:
            self._list(run, existing)
            return existing if existing.status in (ts.TS_RUNNING, ts.TS_AWAITING_OVERRIDE) else None
        now = clock.now_iso()
        stage = existing or self._new(run, name, now)
        ctx = context(run, stage)
        began: dict[str, list[str]] = {}
        for participant in asked:
            ids = list(participant.begin(ctx))
            if ids:
                began.setdefault(participant.kind, []).extend(ids)
        if not began and existing is None:
            return None
        for kind, ids in began.items():
            stage.add(kind, ids)
        stage.started_at_epoch = clock.epoch()
        stage.mark(ts.TS_RUNNING if any(stage.results.values()) else ts.TS_PASSED, now)
        try:
            self.save(stage, new=existing is None)
        except ConditionFailed:  # entered concurrently: that one stands
            return self.enter(run, name)
        self._list(run, stage)
        return stage if stage.status == ts.TS_RUNNING else None

    @staticmethod
    def _list(run: Run, stage: TaskStage) -> None:
        if stage.id not in run.task_stage_ids:
            run.task_stage_ids.append(stage.id)
            run.task_stage_ids.sort()
