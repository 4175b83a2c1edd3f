A=$'tab\\tq'
B="a\"b" C='x y' D=a\ b
export E F=1; declare -a G=([2]=x y); unset F
H+=( z ); H[1]=w; echo ${!H[@]} ${!A} ${H[-1]}
