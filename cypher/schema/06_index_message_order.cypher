// Range index for conversation order inside a group. Parameters: none.
CREATE INDEX message_order IF NOT EXISTS FOR (m:Message) ON (m.group_id, m.turn_created)
