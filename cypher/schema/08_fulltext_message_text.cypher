// Fulltext (Lucene, english analyzer: stemming + stop words) over the verbatim text and its
// retrieval context (previous turn of the session + the speaker's name; see graphmem.ingest).
// Parameters: none. Returns nothing.
CREATE FULLTEXT INDEX message_text IF NOT EXISTS FOR (m:Message) ON EACH [m.text, m.context]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}
