# scdoc 1.11 writes a .P before and after every block, and mandoc -T lint
# warns of each that opens nothing ("skipping paragraph macro"): this
# drops a .P that follows a heading or another .P, or that only precedes a
# heading, a .P or the end of an indent.  The page reads the same.
/^\.TH / {
	# scdoc writes today's date, which would make the committed page
	# drift every day: the Makefile's MAN_DATE (when the pages last
	# changed) and the version instead.
	print $1, $2, $3, "\"" date "\"", "\"" source "\""
	next
}
/^\.P$/ {
	if (prev ~ /^\.(SH|SS|TH|P|RS)( |$)/)
		next
	held = 1
	next
}
{
	if (held && $0 !~ /^\.(SH|SS|P|RE)( |$)/)
		print ".P"
	held = 0
	print
	prev = $0
}
