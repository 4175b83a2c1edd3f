N=4
sbatch <<EOF
#!/bin/bash
#SBATCH --nodes=$N
srun \
  python pretrain_gpt.py --x "${N}" \$HOME
EOF
cat <<-'END'
	literal $N
	END
read -r A <<< "$N"
