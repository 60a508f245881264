# US-002's own check.
out=$(sh greet.sh --bye World 2>&1)
if [ "$out" != "Goodbye, World!" ]; then
	echo "tests/bye.sh: sh greet.sh --bye World"
	echo "  want: Goodbye, World!"
	echo "  got:  $out"
	exit 1
fi
echo "tests/bye.sh: ok"
