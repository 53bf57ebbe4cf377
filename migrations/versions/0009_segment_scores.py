"""Segment-level scores of an evaluation, per job item.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23

Why: a system score alone cannot say whether two jobs really differ; paired
significance tests (scoi eval --compare) resample the per-segment scores of both jobs
on the same items. Rows belong to the ``job_score`` row of the evaluation that produced
them (its signature names the metric and model), and go with it.
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().exec_driver_sql("""
        CREATE TABLE job_segment_score (
            score_id bigint NOT NULL REFERENCES job_score (id) ON DELETE CASCADE,
            idx integer NOT NULL,
            score double precision NOT NULL,
            PRIMARY KEY (score_id, idx)
        );
        COMMENT ON TABLE job_segment_score IS
            'Per-item score of one evaluation (job_score row): idx is job_item.idx of the same job.';
        CREATE VIEW job_item_scores AS
        SELECT s.job_id, g.idx, s.metric, g.score, s.id AS score_id, s.signature, s.created_at
        FROM job_segment_score g JOIN job_score s ON s.id = g.score_id;
    """)


def downgrade() -> None:
    op.get_bind().exec_driver_sql("DROP VIEW job_item_scores; DROP TABLE job_segment_score;")
