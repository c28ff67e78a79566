#!/usr/bin/env bash
# nfs-server.sh — a throwaway userspace NFS server (nfs-ganesha, or the
# kernel's nfsd in User-Mode Linux; with --smb also smbd) in namespaces of
# its own, for herd's tests and local runs: the command the tests, jobs/
# and ../virtual/ call. It is nfsserver.py beside it (python3, standard
# library only); its top comment and README.md here say what it does and
# `nfs-server.sh --help` lists the verbs.
exec python3 "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/nfsserver.py" "$@"
