#!/bin/sh
# Installs the Debian packages soak builds, tests and benchmarks with.
# As root it runs apt-get; otherwise it prints the exact command.
PKGS="build-essential pkg-config
libnng-dev libcurl4-openssl-dev libpq-dev libyaml-dev libjansson-dev libcmocka-dev
libssl-dev openssl
postgresql postgresql-client
libxml2-utils jq curl python3 procps iproute2 nftables
iperf3 haproxy socat"
PKGS=$(echo $PKGS)
if [ "$(id -u)" -ne 0 ]; then
	echo "soak needs these Debian packages; as root run:"
	echo "  apt-get update && apt-get install -y $PKGS"
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps the database server's optional extras out.
apt-get install -y -qq --no-install-recommends $PKGS
