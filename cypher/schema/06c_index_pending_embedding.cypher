// Messages stored without a vector (ingest --embed later) carry :PendingEmbedding until
// `graphmem embed` fills it; this index finds them per group. Parameters: none.
CREATE INDEX message_pending_embedding IF NOT EXISTS FOR (m:PendingEmbedding) ON (m.group_id)
