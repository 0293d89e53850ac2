#!/bin/sh
# keepalived's check of this host's vodcluster manager (keepalived.conf,
# vrrp_script). Exit 0 keeps this host's VRRP instance up: its manager is
# ready to admit (/healthz 200), or the other manager is not ready either
# (their shared Redis down, say: moving the VIP would help no viewer, and
# would cut every node's link to the manager, which goes through the
# VIP). Exit 1 puts it in FAULT, giving the VIP up to the other host:
# this manager is not ready (down, hung, cut off from Redis) and the
# other one is.
#
# Usage: check_manager.sh [THIS_HEALTHZ_URL [OTHER_HEALTHZ_URL]]
# Install it owned by root and not writable by others
# (enable_script_security): install -m 755 check_manager.sh /etc/keepalived/
this=${1:-http://127.0.0.1:8080/healthz}
other=${2:-http://192.0.2.12:8080/healthz}
curl -fsS -o /dev/null -m 1 "$this" 2>/dev/null && exit 0
curl -fsS -o /dev/null -m 1 "$other" 2>/dev/null && exit 1
exit 0
