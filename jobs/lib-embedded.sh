#!/usr/bin/env bash
# lib-embedded.sh — what the seed drivers (seed002-nfs-smb.sh,
# seed002-threads.sh, seed003-sync-async.sh) share: one run of a job file
# against a fresh embedded NFS server (cluster-configs/local/nfs-server.sh),
# through jobs/herd-batch.sh inside the server's network namespace, with a
# monitor rank on ganesha.nfsd and the loop disk, or, for a kernel nfsd
# server (--server knfsd), the guest's node_exporter scraped by rank 0;
# the server is stopped afterwards, also on error or ^C. Source it after
# setting REPO, HERD, SERVER, JOB, RANKS, tmp, image_mb, python and a log
# function; then call embedded_begin.
# shellcheck disable=SC2154 # those are the caller's

# shellcheck disable=SC2034 # links and failed are the caller's results
state=""
links=()
failed=0

stop_server() {
    if [ -n "$state" ]; then
        "$SERVER" stop --state "$state" --purge >/dev/null 2>&1 ||
            log "warning: nfs-server.sh stop --state $state failed; stop it by hand"
        state=""
    fi
}
# shellcheck disable=SC2317  # run by the EXIT trap
embedded_cleanup() { stop_server; rm -f "$out"/.run-*.out; }

# embedded_begin NAME: the output directory (OUT, else
# ${HERD_RESULTS:-<repo>/results}/NAME-<date>) with runs/ in it, as $out;
# the server is stopped at exit, also on ^C.
embedded_begin() {
    out=${OUT:-${HERD_RESULTS:-$REPO/results}/$1-$(date +%Y%m%d-%H%M%S)}
    mkdir -p -- "$out/runs" || { log "cannot create $out"; exit 1; }
    out=$(cd "$out" && pwd)
    trap embedded_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# embedded_start NAME "SERVER START OPTIONS": start a server with those
# options (its state directory: $state); EMBEDDED_SETS holds the --set
# arguments that point a run at it.
embedded_start() {
    local name=$1 server_opts=$2 url loopdev
    state=$(mktemp -d "$tmp/herd-$name.XXXXXX")
    # shellcheck disable=SC2086 # server_opts are separate words
    url=$("$SERVER" start --state "$state" --fs xfs --size "${image_mb}M" $server_opts | sed -n 1p) ||
        { log "nfs-server.sh start $server_opts failed"; exit 1; }
    [ -n "$url" ] || { log "nfs-server.sh start printed no URL"; exit 1; }
    # The monitor also records the loop device under the export.
    local disk=()
    loopdev=$(losetup -j "$state/image.img" | cut -d: -f1 | sed -n 1p)
    [ -z "$loopdev" ] || disk=(--set monitor_disks="${loopdev##*/}")
    log "$name: export $url"
    EMBEDDED_SETS=(--set backend=libnfs --set target="$url" --set monitor_processes=ganesha.nfsd
        "${disk[@]}")
}

# embedded_run NAME "SERVER START OPTIONS" [--set k=v]...: start a server
# with those options, run JOB on it, stop it; the results become
# $out/NAME.h5 (a link, added to links) and a failure sets failed=1.
embedded_run() {
    embedded_start "$1" "$2"
    local name=$1
    shift 2
    embedded_batch "$name" "${EMBEDDED_SETS[@]}" "$@"
}

# embedded_monitor: the --set arguments and rank count (EMBEDDED_NP) of the
# monitor for the started server ($state): ganesha: one more rank sampling
# the server's processes (those in the namespace the monitor runs in:
# monitor_scope's default inside nfs-server.sh exec) and the loop disk
# every 200 ms; kernel nfsd: its guest's node_exporter,
# scraped by rank 0 every 500 ms (the guest has one CPU; each scrape
# takes a little of it).
embedded_monitor() {
    # (the server's settings, as statedir.py reads them: NUL-ended records)
    if python3 "$REPO/cluster-configs/local/statedir.py" settings --state "$state" |
        tr '\0' '\n' | grep -qx 'SERVER=knfsd'; then
        EMBEDDED_NP=$RANKS
        EMBEDDED_MONITOR=(--set monitor_url="$(python3 "$REPO/cluster-configs/local/knfsd.py" metrics-url)"
            --set monitor_interval=500ms)
    else
        EMBEDDED_NP=$((RANKS + 1))
        EMBEDDED_MONITOR=(--set monitor_rank=last --set monitor_interval=200ms)
    fi
}

# embedded_batch NAME SET_ARG...: embedded_herd, then stop the server.
# What every seed driver's run shares.
embedded_batch() {
    embedded_herd "$@"
    stop_server
}

# embedded_herd NAME SET_ARG...: run $JOB with herd-batch.sh inside the
# started server's namespace ($state) with embedded_monitor's monitor, the
# given --set arguments after the monitor's; the server keeps running;
# the results become $out/NAME.h5 (a link, added to links), a failure
# sets failed=1.
embedded_herd() {
    local name=$1 runout rc dir
    shift
    embedded_monitor
    runout=$out/.run-$name.out
    set +e
    "$SERVER" exec --state "$state" -- env HERD="$HERD" HERD_REPO="$REPO" \
        HERD_RESULTS="$out/runs" HERD_TAG="$name" HERD_NP="$EMBEDDED_NP" HERD_LAUNCHER=mpirun \
        HERD_HOSTFILE= HERD_MPIRUN_ARGS="--oversubscribe ${HERD_MPIRUN_ARGS:-}" \
        HERD_PYTHON="$python" \
        bash "$REPO/jobs/herd-batch.sh" "$JOB" "${EMBEDDED_MONITOR[@]}" "$@" | tee "$runout"
    rc=${PIPESTATUS[0]}
    set -e
    dir=$(tail -n 1 "$runout")
    rm -f "$runout"
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
        log "$name: herd-batch.sh exit code $rc"
        failed=1
    fi
    if [ -d "$dir" ] && [ -s "$dir/results.h5" ]; then
        ln -sfn "runs/$(basename -- "$dir")/results.h5" "$out/$name.h5"
        links+=("$out/$name.h5")
    else
        log "$name: no results"
        failed=1
    fi
}

# embedded_finish TITLE [FUNCTION]: the summary of all runs, in
# $out/summary.txt and on stdout: TITLE, herd-compare over the runs (ratios
# to the first; runs named by their label when each has one, so that runs
# of one label are repeats, else by file name), then what FUNCTION prints;
# exits with $failed.
embedded_finish() {
    ((${#links[@]})) || { log "no run produced results"; exit 1; }
    {
        echo
        echo "$1"
        "$python" "$REPO/analysis/herd-compare" "${links[@]}" -o "$out/compare" ||
            failed=1
        if [ -n "${2:-}" ]; then "$2" || failed=1; fi
    } >"$out/summary.txt" 2>&1
    cat "$out/summary.txt"
    log "results in $out"
    exit "$failed"
}
