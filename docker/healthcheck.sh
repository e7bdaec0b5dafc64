#!/bin/bash
# Healthy once the Thrift2 gateway answers a real request: a binary-protocol listNamespaces
# call (the gateway's default, unframed transport) whose reply names the `default` namespace,
# which the master only lists after it has finished initialising.
set -eu
exec 3<>/dev/tcp/127.0.0.1/9090
printf '\x80\x01\x00\x01\x00\x00\x00\x0elistNamespaces\x00\x00\x00\x00\x00' >&3
timeout 5 dd bs=1 count=512 <&3 2>/dev/null | grep -qa default
