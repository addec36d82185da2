// Range index for placing messages by time: the group's messages from an instant on, per
// channel and per session (ingest/order_region, ingest/order_context). Parameters: none.
CREATE INDEX message_instant IF NOT EXISTS FOR (m:Message) ON (m.group_id, m.order_instant)
