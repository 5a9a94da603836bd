"""LATE_BUCKETS gained eight bounds below a second (1 ms to 0.5 s) in front: a FireTally row's bucket is an
index, so every row counted before moves up eight. A fire counted under the old first bucket (within 1 s) stays
within 1 s; only its finer place is unknown. In two steps, so no row's new index meets an old one mid-update
under the unique (domain, kind, outcome, bucket)."""

from django.db import migrations

SHIFT = 8

FORWARD = [
    f"UPDATE timers_firetally SET bucket = bucket + 1000",
    f"UPDATE timers_firetally SET bucket = bucket - 1000 + {SHIFT}",
]
# Back: the finer buckets fold into the old first one (summed), then everything moves down.
BACKWARD = [
    f"""INSERT INTO timers_firetally (domain, kind, outcome, bucket, fires, late_seconds)
        SELECT domain, kind, outcome, 1000, sum(fires), sum(late_seconds) FROM timers_firetally
        WHERE bucket <= {SHIFT} GROUP BY domain, kind, outcome""",
    f"DELETE FROM timers_firetally WHERE bucket <= {SHIFT}",
    f"UPDATE timers_firetally SET bucket = bucket + 2000 WHERE bucket < 1000",
    f"UPDATE timers_firetally SET bucket = CASE WHEN bucket = 1000 THEN 0 ELSE bucket - 2000 - {SHIFT} END",
]


class Migration(migrations.Migration):
    dependencies = [("timers", "0019_member_zone")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
