"""Private database and queue servers the harness starts for itself: loopback only, temporary, never shared.

Rule: each server binds 127.0.0.1 on a free port, keeps its data in a temporary directory removed
when it stops, and is started and stopped by the harness alone (never the machine's own PostgreSQL
or Redis). It may import the floor and design (to know which stores need which server).

- common.py: finding binaries, a free loopback port, the start/probe/stop life of any private server
- private_postgres.py, private_redis.py: the two servers
- for_stores.py: the servers a campaign's designs need (each store kind names its server, and a spec
  declares the ones it keeps other state in: `[servers]`), with a fresh database for every run
"""
