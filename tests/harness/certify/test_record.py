"""certification.json's point records are planned points (one declaration of their fields)."""

from __future__ import annotations

import json

from harness.certify.record import Certification, PointRecord
from harness.certify.suite import PlannedPoint
from tests.harness.certify.fixture_bundle import unpack


def test_a_record_is_its_planned_point_and_reads_back():
    point = PlannedPoint(label="p", case="gpt3_125M", framework="pytorch", nproc=1, nnodes=1,
                         precision=None, settings={"max_steps": 12}, checkpoints=(4, 8), checkpoint_window=2)
    record = PointRecord.of(point)
    record.run_ids.append("r1")
    assert isinstance(record, PlannedPoint)
    assert PlannedPoint(**record.model_dump(include=set(PlannedPoint.model_fields))) == point
    data = json.loads(record.model_dump_json())
    assert data["checkpoints"] == [4, 8] and data["run_ids"] == ["r1"]
    assert PointRecord.model_validate(data) == record


def test_a_recorded_certification_reads(tmp_path):
    folder = unpack(tmp_path)
    cert = Certification.model_validate_json((folder / "certification.json").read_text())
    assert cert.points[0].checkpoints == (4, 8, 12) and len(cert.points[0].run_ids) == 3
    assert cert.stopped is None and cert.passed
