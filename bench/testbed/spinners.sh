# Spin loops a bench script starts beside what it measures (source this file):
#   start_spinner LIMIT_S [PREFIX...]   a `while :; do :; done` under PREFIX (e.g. chrt --idle 0
#                                       taskset -c 1), ended by `timeout` after LIMIT_S at most
#   stop_spinners                       ends the loops started, by their process ids
# The caller sets its own EXIT trap to call stop_spinners.
spinners=()
start_spinner() {
	local limit=$1
	shift
	timeout "$limit" "$@" sh -c 'while :; do :; done' &
	spinners+=("$!")
}
stop_spinners() {
	local pid
	for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${spinners[@]}"; do wait "$pid" 2>/dev/null || true; done
	spinners=()
}
