"""Parallel file systems over the long-haul link: no model yet, so no checks.

S3-gpfs-failover (``points_storage.toml``) needs a GPFS-like write path (clients, NSD servers,
their disks) over several parallel extender links with link failure and subnet-manager
rerouting. Its published aggregate (1558 MBps over four SDR links of ~950 MBps each) is below
what the links carry, so the file system's servers or disks set it; a model would need their
rates as inputs, which the source does not give. Listed in the validation table as not checked.
"""

CHECKS: dict = {}
