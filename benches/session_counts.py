#!/usr/bin/env python3
# Figure for /sessions and `cairn sessions`: the message-count query
# (store::sessions::message_counts) on the schema's own index shape.
# The /sessions message-count query on the real index shape, 50 sessions x 2,000 messages.
import sqlite3, time, os
import tempfile
db=os.path.join(tempfile.mkdtemp(), 'count.db')
if os.path.exists(db): os.remove(db)
c=sqlite3.connect(db)
c.execute("CREATE TABLE message (id TEXT PRIMARY KEY NOT NULL, session_id TEXT NOT NULL, role TEXT NOT NULL, time_created INTEGER NOT NULL, data TEXT NOT NULL, rev INTEGER NOT NULL DEFAULT 0)")
c.execute("CREATE INDEX message_by_session ON message (session_id, id, rev)")
payload='x'*2000
c.executemany("INSERT INTO message VALUES (?,?,?,?,?,0)", ((f"msg_{s:03}_{i:06}", f"ses_{s:03}", 'user', i, payload) for s in range(50) for i in range(2000)))
c.commit(); c.close()
c=sqlite3.connect(db)
ids=[f"ses_{s:03}" for s in range(50)]
best=1e9
for _ in range(20):
    t=time.perf_counter()
    for i in ids: c.execute("SELECT count(*) FROM message WHERE session_id = ?", (i,)).fetchone()
    best=min(best,time.perf_counter()-t)
print(f"50 counts over 100,000 messages: {best*1000:.2f} ms (best of 20), db {os.path.getsize(db)/1e6:.0f} MB")
c.close(); import shutil; shutil.rmtree(os.path.dirname(db))
