f() { echo in; }
for i in 1 2 3; do echo $i; done
while true; do break; done
for ((i=0;i<2;i++)); do :; done
mkdir -p out || { echo fail; exit 1; }
python a.py 2>&1 | tee log > /dev/null &
( cd x; A=1 )
G=$(nproc); W=$((G*2)); echo `date` <(ls)
set -- a "b c"; shift; echo "$@" $# $*
