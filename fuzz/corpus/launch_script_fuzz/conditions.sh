X=${1:-a}
if [[ $X == a* && -n "$X" ]]; then
  Y=$(( (3 + 4) * 2 % 5 ))
elif [ "$X" -eq 3 -o ! -f x ]; then
  Y=2
else
  exit 1
fi
case $X in a|b) Z=${X^^};; *) Z=${X%%.*};; esac
echo ${#Z} ${Z/A/b} ${Z:0:1}
