#!/usr/bin/env bash
# Two test machines on this one: network namespaces, each with only its own loopback (127.0.0.1 inside,
# unreachable from outside but through `ip netns exec`), an sshd of its own started for the test, and
# keys made for the test. pytest-xdist reaches them as `--tx ssh=kt-a//python=...` through an ssh config
# whose ProxyCommand is `ip netns exec <ns> socat STDIO TCP:127.0.0.1:22` (docs/how-to/pytest.md).
#
#   hosts.sh up DIR             make DIR/ (keys, ssh_config), the namespaces kt-<tag>-a and -b, their sshds
#   hosts.sh ship DIR WHEEL PROJECT   build one venv (the wheel, pytest, pytest-xdist) and ship it, with the
#                               folder of test files PROJECT, to each host over ssh as tarballs:
#                               DIR/hosts/<h>/env and DIR/hosts/<h>/project (xdist's rsync is deprecated)
#   hosts.sh kill DIR HOST      SIGKILL the host's sshd and every process inside its namespace (a crash)
#   hosts.sh down DIR           kill what is left in both namespaces, delete them and DIR
#
# Needs root (ip netns), openssh-server, openssh-client, socat, iproute2. Nothing listens outside the
# namespaces: each sshd binds 127.0.0.1:22 of its own namespace.
set -euo pipefail

HOSTS="a b"
cmd=${1:?usage: hosts.sh up|ship|kill|down DIR ...}
dir=${2:?usage: hosts.sh $cmd DIR ...}

ns_of() { cat "$dir/hosts/$1/netns"; }

up() {
    mkdir -p "$dir/keys" /run/sshd  # /run/sshd: sshd's privilege-separation directory
    dir=$(cd "$dir" && pwd)
    ssh-keygen -q -t ed25519 -N '' -C killtest-client -f "$dir/keys/client"
    cp "$dir/keys/client.pub" "$dir/keys/authorized_keys"
    : > "$dir/keys/known_hosts"
    : > "$dir/ssh_config"
    tag=$(basename "$dir" | tr -c 'a-zA-Z0-9\n' '-' | tail -c 9)
    for h in $HOSTS; do
        ns="kt-$tag-$h"
        mkdir -p "$dir/hosts/$h"
        echo "$ns" > "$dir/hosts/$h/netns"
        ip netns add "$ns"
        ip netns exec "$ns" ip link set lo up
        ssh-keygen -q -t ed25519 -N '' -C "kt-$h" -f "$dir/hosts/$h/host_key"
        echo "kt-$h $(cut -d' ' -f1,2 "$dir/hosts/$h/host_key.pub")" >> "$dir/keys/known_hosts"
        cat > "$dir/hosts/$h/sshd_config" <<EOF
ListenAddress 127.0.0.1:22
HostKey $dir/hosts/$h/host_key
PidFile $dir/hosts/$h/sshd.pid
AuthorizedKeysFile $dir/keys/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 50
MaxSessions 50
EOF
        # -D: stays in the foreground (setsid: in a session of its own, so a killed test leaves no orphan
        # attached to it); -e: its log to the host's sshd.log.
        setsid ip netns exec "$ns" /usr/sbin/sshd -D -e -f "$dir/hosts/$h/sshd_config" \
            > "$dir/hosts/$h/sshd.log" 2>&1 < /dev/null &
        cat >> "$dir/ssh_config" <<EOF
Host kt-$h
    User root
    IdentityFile $dir/keys/client
    IdentitiesOnly yes
    UserKnownHostsFile $dir/keys/known_hosts
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 10
    ProxyCommand ip netns exec $ns socat STDIO TCP:127.0.0.1:22
EOF
    done
    for h in $HOSTS; do  # wait until each answers over ssh
        for _ in $(seq 100); do
            ssh -F "$dir/ssh_config" "kt-$h" true 2>/dev/null && break
            sleep 0.1
        done
        ssh -F "$dir/ssh_config" "kt-$h" true
    done
}

ship() {
    wheel=${3:?usage: hosts.sh ship DIR WHEEL PROJECT}
    project=${4:?usage: hosts.sh ship DIR WHEEL PROJECT}
    dir=$(cd "$dir" && pwd)
    python3 -m venv "$dir/env-build/env"
    "$dir/env-build/env/bin/python" -m pip install --quiet "$wheel" 'pytest>=7' 'pytest-xdist>=3.5'
    for h in $HOSTS; do
        # The environment travels over ssh itself; the host's Python is /usr/bin/python3 as the build's is
        # (a venv's python is a link to it), so the venv works at its new path for `python -m`.
        tar -C "$dir/env-build" -czf - env | ssh -F "$dir/ssh_config" "kt-$h" \
            "mkdir -p '$dir/hosts/$h' && tar -C '$dir/hosts/$h' -xzf -"
        tar -C "$project" -czf - . | ssh -F "$dir/ssh_config" "kt-$h" \
            "mkdir -p '$dir/hosts/$h/project' && tar -C '$dir/hosts/$h/project' -xzf -"
        ssh -F "$dir/ssh_config" "kt-$h" "'$dir/hosts/$h/env/bin/python' -c 'import killtest, xdist'"
    done
    rm -rf "$dir/env-build"
}

kill_host() {
    h=${3:?usage: hosts.sh kill DIR HOST}
    # Every process in the namespace: its sshd, the ssh sessions and the xdist worker with its scrapers.
    pids=$(ip netns pids "$(ns_of "$h")" || true)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
}

down() {
    [ -d "$dir/hosts" ] || return 0
    for h in $HOSTS; do
        [ -f "$dir/hosts/$h/netns" ] || continue
        kill_host "$dir" "$dir" "$h"
        ip netns delete "$(ns_of "$h")" 2>/dev/null || true
    done
    rm -rf "$dir"
}

case "$cmd" in
    up) up ;;
    ship) ship "$@" ;;
    kill) kill_host "$@" ;;
    down) down ;;
    *) echo "hosts.sh: unknown command $cmd (up, ship, kill, down)" >&2; exit 2 ;;
esac
