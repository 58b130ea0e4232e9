from gradviz.cli import main

main(prog_name="gradviz")
