"""``source_job_id`` came after the first records were written: Parquet files without the
column still read back, with the field null."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _telemetry import MakeRecord

from assay.telemetry import SCHEMA, query


def test_parquet_without_the_column_reads_back_with_nulls(
    tmp_path: Path, make_record: MakeRecord
) -> None:
    rec = make_record(job_id="old-1")
    del rec["source_job_id"]
    old_schema = pa.schema([f for f in SCHEMA if f.name != "source_job_id"])
    part = tmp_path / "parquet" / "date=2024-05-01"
    part.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist([rec], schema=old_schema),
        part / "part-0123456789abcdef0123456789abcdef.parquet",
    )
    table = query(tmp_path)
    assert table["job_id"].to_pylist() == ["old-1"]
    assert table["source_job_id"].to_pylist() == [None]
