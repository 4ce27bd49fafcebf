import json,subprocess,sys,statistics as st
for r in (9,10,11):
    run=f'bench/testbed/loop-span3/run{r}'
    d=json.load(open(f'{run}/loop-result.json'))
    out=[]
    for name,pred,meas,rounds in d['rows']:
        res={}
        for stat,prof in (('median',f'{run}/profiles'),('lq',f'/tmp/w/s11/rep-lq/run{r}/profiles')):
            j=json.loads(subprocess.run(['build/sailor','simulate','--model','gpt2-tiny-six','--plan',f'{run}/plans/{name}.json','--profiles',prof,'--gpus','data/testbed/gpus-cpu-span3.json','--network',f'{run}/network.json','--cluster',f'{run}/cluster.json','--json'],capture_output=True,text=True).stdout)
            res[stat]=j['throughput_it_s']
        out.append((name,meas,max(rounds),res['median'],res['lq'],pred))
    fastest=max(o[1] for o in out if not o[0].startswith('baseline'))
    print(f'run{r}')
    for o in out: print('  %-20s meas %.3f (best round %.3f)  pred median-prof %.3f (%+.1f%%, loop said %.3f)  lq-prof %.3f (%+.1f%%)'%(o[0],o[1],o[2],o[3],(o[3]/o[1]-1)*100,o[5],o[4],(o[4]/o[1]-1)*100))
    for k,idx in (('median',3),('lq',4)):
        cand=[o for o in out if not o[0].startswith('baseline')]
        first=max(cand,key=lambda o:o[idx])
        print('  %s profiles: first %s measured %.3f = %.1f%% of fastest'%(k,first[0],first[1],first[1]/fastest*100))
