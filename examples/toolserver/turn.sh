#!/bin/sh
# Turns 0, 2, ... are the Python agent; turns 1, 3, ... the bash one.
here=$(dirname "$0")
case $((SOAK_TURN % 2)) in
0) exec "$here/agent.py" ;;
*) exec "$here/agent.sh" ;;
esac
