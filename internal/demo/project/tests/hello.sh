# US-001's own check: ralph runs it after the agent stops.
out=$(sh greet.sh World 2>&1)
if [ "$out" != "Hello, World!" ]; then
	echo "tests/hello.sh: sh greet.sh World"
	echo "  want: Hello, World!"
	echo "  got:  $out"
	exit 1
fi
echo "tests/hello.sh: ok"
