// Range index for replies stored before their parent (ingest/link_reply_children). Parameters: none.
CREATE INDEX message_reply_to IF NOT EXISTS FOR (m:Message) ON (m.group_id, m.reply_to)
