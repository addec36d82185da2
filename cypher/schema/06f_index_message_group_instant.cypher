// Range index for time windows: a group's messages inside an instant range
// (query/window_messages seeks it once per window instead of filtering every message of the
// group by instant; docs/scale.md). Parameters: none.
CREATE INDEX message_group_instant IF NOT EXISTS FOR (m:Message) ON (m.group_id, m.instant)
